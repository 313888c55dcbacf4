// edgectl plan against a real API server and the emulator, run as a user runs it (a child
// process): an IP policy the operator made and left Ready, then files that keep it, change its
// description, add rules (one to a policy the same files create), and adopt by id annotation a
// policy another namespace manages. Exit codes 0, 2 and 1, the text and the JSON; and not one
// write: the emulator counts no create, update or delete, the API server no POST, PUT, PATCH or
// DELETE of the edge.tunnel.dev group while edgectl plans.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { ID_ANNOTATION } from '../../src/operator/runtime/constants.ts';
import {
  kubeconfig,
  NAMESPACES,
  type OperatorProcess,
  obj,
  ready,
  res,
  skipReason,
  startOperator,
  type World,
  waitFor,
  world,
} from './harness.ts';

const P = res('ippolicies');

/** The CLI as a user runs it: this cluster, the emulator's URL and key in the environment. */
function edgectl(args: string[], env: Record<string, string>) {
  const base = { ...process.env };
  for (const k of Object.keys(base)) if (k.startsWith('EDGE_')) delete base[k];
  const p = spawn(process.execPath, [join(REPO_ROOT, 'src/cli/edgectl.ts'), ...args], {
    cwd: REPO_ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d) => {
    stdout += d;
  });
  p.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Emulator calls that change something (anything but a get or a list). */
const apiWrites = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([k]) => !/\.(get|list) /.test(k))
    .reduce((n, [, v]) => n + v, 0);

describe.skipIf(!!skipReason)('edgectl plan', () => {
  let w: World;
  let op: OperatorProcess | undefined;
  let other: string;
  let dir: string;
  const ids: Record<string, string> = {};

  /** The API server's writes to the edge.tunnel.dev group, by series (GET /metrics, admin credentials). */
  async function kubeWrites(): Promise<Map<string, number>> {
    const auth = await w.kube.target.auth();
    const r = await request(`${w.kube.server}/metrics`, {
      headers: { ...auth.headers, accept: 'text/plain' },
      dispatcher: auth.dispatcher,
    });
    const text = await r.body.text();
    expect(r.statusCode).toBe(200);
    const out = new Map<string, number>();
    for (const line of text.split('\n'))
      if (
        line.startsWith('apiserver_request_total{') &&
        line.includes('group="edge.tunnel.dev"') &&
        /verb="(POST|PUT|PATCH|DELETE|APPLY)"/.test(line)
      )
        out.set(line.slice(0, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1)));
    return out;
  }
  /** The series that grew between two readings. */
  const grew = (before: Map<string, number>, after: Map<string, number>) =>
    [...after]
      .filter(([k, v]) => v > (before.get(k) ?? 0))
      .map(([k, v]) => `${k} +${v - (before.get(k) ?? 0)}`);

  const file = (name: string, docs: object[]) => {
    const path = join(dir, name);
    writeFileSync(path, docs.map((d) => JSON.stringify(d)).join('\n---\n'));
    return path;
  };

  /** edgectl plan of these files; asserts no write to the account or to the cluster while it ran. */
  async function plan(files: string[], ...more: string[]) {
    const [emuBefore, kubeBefore] = [apiWrites(w.emu.counters.snapshot()), await kubeWrites()];
    const args = ['plan', ...files.flatMap((f) => ['-f', f]), '-n', w.ns, '--kubeconfig', kubeconfig];
    const r = await edgectl([...args, '--cluster-id', `e2e-${w.ns}`, ...more], {
      EDGE_API_URL: w.emu.url,
      EDGE_API_KEY: w.emu.apiKey,
    });
    expect(apiWrites(w.emu.counters.snapshot()) - emuBefore).toBe(0);
    expect(grew(kubeBefore, await kubeWrites())).toEqual([]);
    return r;
  }

  const corp = (description: string) => obj('IPPolicy', w.ns, 'corp', { description });
  const rule = (name: string, policy: string, cidr: string) =>
    obj('IPPolicyRule', w.ns, name, { ipPolicyRef: { name: policy }, cidr, action: 'allow' });

  beforeAll(async () => {
    w = await world('plan');
    other = `${w.ns}-b`;
    await w.kube.create(NAMESPACES, undefined, { metadata: { name: other } });
    op = await startOperator(w.emu, w.ns, ['--namespaces', `${w.ns},${other}`]);
    await w.kube.create(P, w.ns, corp('a'));
    await w.kube.create(P, other, obj('IPPolicy', other, 'theirs', { description: 'theirs' }));
    for (const [ns, name] of [
      [w.ns, 'corp'],
      [other, 'theirs'],
    ] as const) {
      const o = await waitFor(`${name} Ready`, async () => {
        const x = await w.kube.get(P, ns, name);
        return ready(x) ? x : undefined;
      });
      ids[name] = (o.status as { id: string }).id;
    }
    // the API server's counter sees the operator's writes: its standing still below means something
    expect([...(await kubeWrites()).values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    await op.kill();
    op = undefined;
    dir = mkdtempSync(join(tmpdir(), 'edgectl-plan-'));
  });
  afterAll(async () => {
    await op?.kill();
    await w?.kube.delete(NAMESPACES, undefined, other).catch(() => {});
    await w?.close();
  });

  it('the policy as it is: nothing to do, exit 0', async () => {
    const r = await plan([file('a.yaml', [corp('a')])]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`= IPPolicy ${w.ns}/corp: no changes ${ids.corp}`);
    expect(r.code).toBe(0);
  });

  it('a changed description and new rules: update field by field, creates with their bodies, exit 2', async () => {
    const r = await plan([
      file('b.yaml', [corp('b')]),
      file('c.yaml', [
        rule('office', 'corp', '192.0.2.0/24'),
        obj('IPPolicy', w.ns, 'fresh', { description: 'made with its rule' }),
        rule('fresh-office', 'fresh', '198.51.100.0/24'),
      ]),
    ]);
    expect(r.stderr).toBe('');
    const out = r.stdout.split('\n');
    expect(out).toContain(`~ IPPolicy ${w.ns}/corp: update ${ids.corp}`);
    expect(out).toContain('    description: "a" -> "b"');
    expect(out).toContain(`+ IPPolicyRule ${w.ns}/office: create`);
    expect(out).toContain(`    ip_policy_id: "${ids.corp}"`);
    expect(out).toContain('    cidr: "192.0.2.0/24"');
    expect(out).toContain(`+ IPPolicy ${w.ns}/fresh: create`);
    // a reference to a policy the same files create: the id it will have
    expect(out).toContain('    ip_policy_id: "<id of IPPolicy/fresh>"');
    expect(out).toContain(
      'Plan: 3 to create, 1 to update, 0 to adopt, 0 to delete, 0 unchanged; 0 refused, 0 waiting, 0 unknown.',
    );
    expect(r.code).toBe(2);
  });

  it("adopting another namespace's policy by id annotation: refused OwnedElsewhere, and the refusal wins, exit 1; -o json", async () => {
    const steal = obj(
      'IPPolicy',
      w.ns,
      'steal',
      { description: 'mine now' },
      { [ID_ANNOTATION]: ids.theirs! },
    );
    const files = [file('a.yaml', [corp('a')]), file('c1.yaml', [rule('office', 'corp', '192.0.2.0/24')])];
    const text = await plan([...files, file('d.yaml', [steal])]);
    expect(text.stdout).toContain(
      `! IPPolicy ${w.ns}/steal: refused: OwnedElsewhere: ${ids.theirs} is managed by an object in another namespace; not taking it over`,
    );
    expect(text.code).toBe(1);

    const r = await plan([...files, join(dir, 'd.yaml')], '-o', 'json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout);
    expect(doc).toMatchObject({
      kind: 'EdgePlan',
      version: 1,
      exitCode: 1,
      summary: { create: 1, update: 0, nothing: 1, refuse: 1 },
      notes: [],
    });
    expect(doc.objects).toEqual([
      {
        kind: 'IPPolicy',
        namespace: w.ns,
        name: 'corp',
        action: 'nothing',
        id: ids.corp,
        account: 'installation',
      },
      {
        kind: 'IPPolicyRule',
        namespace: w.ns,
        name: 'office',
        action: 'create',
        account: 'installation',
        body: expect.objectContaining({ cidr: '192.0.2.0/24', action: 'allow', ip_policy_id: ids.corp }),
      },
      {
        kind: 'IPPolicy',
        namespace: w.ns,
        name: 'steal',
        action: 'refuse',
        account: 'installation',
        reason: 'OwnedElsewhere',
        message: `${ids.theirs} is managed by an object in another namespace; not taking it over`,
      },
    ]);
    // nothing of the plan was made
    expect((await w.kube.list(P, w.ns)).items.map((o) => o.metadata.name)).toEqual(['corp']);
  });
});
