// edgectl trace against a real API server: deploy/examples with the operator running, the real
// CLI as a child process; the tree of an edge, its exit code when all is Ready, when a
// reference is broken, when the object does not exist, and on bad usage.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TraceNode } from '../../src/cli/trace-tree.ts';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply, readManifests } from '../../src/operator/apply.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import {
  condition,
  kubeconfig,
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

const SECRETS = { group: '', version: 'v1', plural: 'secrets' };

/** The CLI as a user runs it; no API credentials unless given. */
function edgectl(args: string[], env: Record<string, string> = {}) {
  const base = { ...process.env };
  for (const k of ['EDGE_API_URL', 'EDGE_API_KEY', 'EDGE_API_KEY_FILE']) delete base[k];
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

const summary = (n: TraceNode): unknown => ({
  [`${n.kind}/${n.name}`]: n.ready,
  ...(n.children.length ? { children: n.children.map(summary) } : {}),
});
const find = (n: TraceNode, kind: string, name: string): TraceNode | undefined =>
  n.kind === kind && n.name === name ? n : n.children.map((c) => find(c, kind, name)).find(Boolean);

describe.skipIf(!!skipReason)('edgectl trace', () => {
  let w: World;
  let op: OperatorProcess;
  const trace = (target: string, ...more: string[]) =>
    edgectl(['trace', target, '-n', w.ns, '--kubeconfig', kubeconfig, ...more]);

  beforeAll(async () => {
    w = await world('trace');
    op = await startOperator(w.emu, w.ns);
    const objs = readManifests(join(REPO_ROOT, 'deploy/examples'))
      .filter((o) => o.kind !== 'Namespace')
      .map((o) => ({ ...o, metadata: { ...o.metadata, namespace: w.ns } }));
    await apply(w.kube, objs, w.ns);
    await waitFor(
      'every object Ready',
      async () => {
        for (const b of BINDINGS)
          for (const o of (await w.kube.list(res(b.plural), w.ns)).items)
            if (!ready(o) || o.status?.observedGeneration !== o.metadata.generation) return false;
        return true;
      },
      60_000,
    );
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('the example edge: routes, backends, IP policy and rules, Secrets; all Ready, exit 0', async () => {
    const r = await trace('HTTPSEdge/app', '-o', 'json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const root = JSON.parse(r.stdout) as TraceNode;
    expect(summary(root)).toEqual({
      'HTTPSEdge/app': true,
      children: [
        {
          'HTTPSEdgeRoute/app-root': true,
          children: [
            {
              'WeightedBackend/web-split': true,
              children: [{ 'TunnelGroupBackend/web': true }, { 'TunnelGroupBackend/web-canary': true }],
            },
            {
              'IPPolicy/corp': true,
              children: [{ 'IPPolicyRule/office': true }, { 'IPPolicyRule/office-v6': true }],
            },
            { 'Secret/edge-auth': true },
          ],
        },
        {
          'HTTPSEdgeRoute/app-webhooks': true,
          children: [{ 'TunnelGroupBackend/web': true }, { 'Secret/edge-auth': true }],
        },
      ],
    });
    const edge = await w.kube.get(res('httpsedges'), w.ns, 'app');
    expect(root).toMatchObject({ reason: 'Synced', id: edge.status!.id });
    expect(root.age).toMatch(/^\d+[smhd]$/);
    expect(find(root, 'Secret', 'edge-auth')).toMatchObject({
      keys: ['oidc-client-secret'],
      reason: 'Exists',
    });
    // no agent, and status shows tunnels only after the operator's first interval: none listed
    expect(find(root, 'TunnelGroupBackend', 'web')?.children).toEqual([]);

    // the tree for a person (not a terminal here: indentation, no colour)
    const t = await trace('edgehttps/app');
    expect(t.code).toBe(0);
    const lines = t.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME +READY +REASON +ID +AGE +NOTES$/);
    expect(lines[1]).toMatch(/^HTTPSEdge\/app +True +Synced +\S+ +\d+[smhd]$/);
    expect(lines).toContainEqual(expect.stringMatching(/^ {6}WeightedBackend\/web-split +True +Synced /));
    expect(t.stdout).not.toContain('\x1b[');
  });

  it('with API credentials: the live online tunnels under the backend they serve', async () => {
    const agent = await fetch(`${w.emu.url}/_emulator/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${w.emu.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'web-1',
        region: 'eu',
        tunnels: [{ labels: { app: 'web', track: 'stable' }, forwards_to: 'localhost:8080' }],
      }),
    });
    expect(agent.status).toBe(201);
    const r = await edgectl(['trace', 'wb/web-split', '-n', w.ns, '--kubeconfig', kubeconfig, '-o', 'json'], {
      EDGE_API_URL: w.emu.url,
      EDGE_API_KEY: w.emu.apiKey,
    });
    expect(r.code).toBe(0);
    const root = JSON.parse(r.stdout) as TraceNode;
    expect(root.tunnelsOnline).toBe(1);
    expect(find(root, 'TunnelGroupBackend', 'web')).toMatchObject({
      tunnelsOnline: 1,
      children: [{ kind: 'Tunnel', ready: true, region: 'eu' }],
    });
    expect(find(root, 'TunnelGroupBackend', 'web-canary')).toMatchObject({ tunnelsOnline: 0, children: [] });
  });

  it('a broken reference: the node is marked missing, the route not Ready, exit 1', async () => {
    await w.kube.create(
      res('httpsedgeroutes'),
      w.ns,
      obj('HTTPSEdgeRoute', w.ns, 'broken', {
        edgeRef: { name: 'app' },
        matchType: 'path_prefix',
        match: '/broken',
        backend: { backendRef: { kind: 'TunnelGroupBackend', name: 'nope' } },
      }),
    );
    await waitFor(
      'the route waits for its backend',
      async () => {
        const o = await w.kube.get(res('httpsedgeroutes'), w.ns, 'broken');
        return condition(o, 'Ready')?.reason === 'WaitingForReference';
      },
      30_000,
    );
    const r = await trace('HTTPSEdge/app', '-o', 'json');
    expect(r.code).toBe(1);
    const root = JSON.parse(r.stdout) as TraceNode;
    expect(root.ready).toBe(true);
    expect(find(root, 'HTTPSEdgeRoute', 'broken')).toMatchObject({
      ready: false,
      reason: 'WaitingForReference',
      children: [
        {
          kind: 'TunnelGroupBackend',
          name: 'nope',
          missing: true,
          ready: false,
          reason: 'NotFound',
          via: 'spec.backend.backendRef',
        },
      ],
    });
    // the rest of the tree is as it was
    expect(find(root, 'HTTPSEdgeRoute', 'app-root')?.ready).toBe(true);
    const t = await trace('HTTPSEdge/app');
    expect(t.code).toBe(1);
    expect(t.stdout).toMatch(/TunnelGroupBackend\/nope +Missing +NotFound/);

    // a missing Secret: only whether it exists, never a value
    await w.kube.delete(res('httpsedgeroutes'), w.ns, 'broken');
    await w.kube.delete(SECRETS, w.ns, 'edge-auth');
    const s = await trace('edgeroute/app-webhooks', '-o', 'json');
    expect(s.code).toBe(1);
    expect(find(JSON.parse(s.stdout), 'Secret', 'edge-auth')).toMatchObject({
      missing: true,
      ready: false,
      keys: ['stripe-webhook-secret'],
    });
    expect(s.stdout).not.toContain('whsec_');
  });

  it('an object that does not exist: exit 4', async () => {
    const r = await trace('HTTPSEdge/nope');
    expect(r.code).toBe(4);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`error: HTTPSEdge "nope" not found in namespace ${w.ns}\n`);
  });

  it('bad usage: exit 2, an unknown kind named with the accepted ones on one line', async () => {
    const r = await trace('Deployment/app');
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('unknown kind "Deployment": use one of');
    expect(r.stderr).toContain('HTTPSEdgeRoute (httpsedgeroutes, edgeroute)');
    expect((await trace('HTTPSEdge/app', '-o', 'yaml')).code).toBe(2);
    expect((await trace('app')).code).toBe(2);
  });
});
