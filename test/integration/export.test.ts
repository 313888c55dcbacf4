// edgectl export against the emulator: an account made by hand comes out as the custom
// resources that adopt it, references as names, secrets as Secret references, and every object
// asks for exactly what the API holds (what the engine compares: nothing to write).
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../../src/cli/run-cli.ts';
import { exportAccount } from '../../src/operator/export.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import type { RemoteBase } from '../../src/operator/runtime/bindings/binding.ts';
import {
  covers,
  outputToInput,
  secretDigest,
  withoutSecrets,
} from '../../src/operator/runtime/bindings/module-compare.ts';
import { encodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { ID_ANNOTATION } from '../../src/operator/runtime/constants.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { populateAccount, SECRETS } from '../support/account.ts';
import { capturedIO } from '../support/cli-io.ts';
import { scratchDir } from '../support/scratch.ts';
import { emulatorWithClient, type Harness } from './harness.ts';

let h: Harness;
let account: Awaited<ReturnType<typeof populateAccount>>;
beforeAll(async () => {
  h = await emulatorWithClient();
  account = await populateAccount(h.client);
});
afterAll(() => h.close());

/** `edgectl export` against an emulator's account (this file's unless said). */
async function runOn(on: Harness, ...args: string[]) {
  const io = capturedIO({ sleep: (ms) => new Promise((r) => setTimeout(r, ms)) });
  // the emulator here has no limit: the export need not keep to the default 120 a minute
  const code = await runCli(
    ['export', '--api-url', on.emu.url, '--api-key', on.emu.apiKey, '--api-rate-limit', '100000', ...args],
    io,
  );
  const out = io.outText();
  return { code, out, err: io.errText(), docs: parseAllDocuments(out).map((d) => d.toJS() as KubeObject) };
}
const run = (...args: string[]) => runOn(h, ...args);

/** Every remote resource of the account, by id. */
async function remotes(): Promise<Map<string, RemoteBase>> {
  const out = new Map<string, RemoteBase>();
  for (const b of BINDINGS)
    for await (const r of b.api.list(h.client, {}) as AsyncIterable<RemoteBase>) out.set(r.id, r);
  return out;
}

describe('edgectl export', () => {
  it('writes one object per resource, named from descriptions, with references as names', async () => {
    const r = await run('-n', 'team', '-o', 'yaml');
    expect(r.code, r.err).toBe(0);
    const objs = r.docs;
    expect(objs).toHaveLength(account.resources);
    expect(new Set(objs.map((o) => o.kind))).toEqual(new Set(BINDINGS.map((b) => b.kind)));
    for (const o of objs) {
      expect(o.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
      expect(o.metadata.namespace).toBe('team');
      expect(o.metadata.annotations?.[ID_ANNOTATION]).toMatch(/^[a-z]+_/);
    }
    for (const b of BINDINGS) {
      const names = objs.filter((o) => o.kind === b.kind).map((o) => o.metadata.name);
      expect(new Set(names).size, b.kind).toBe(names.length);
    }
    const named = (kind: string, name: string) =>
      objs.find((o) => o.kind === kind && o.metadata.name === name);
    expect(named('IPPolicy', 'corp')?.spec).toEqual({ description: 'corp', metadata: 'team=net' });
    expect(named('IPPolicy', 'office-berlin')).toBeDefined();
    const ruleRefs = objs
      .filter((o) => o.kind === 'IPPolicyRule')
      .map((o) => o.spec!.ipPolicyRef as { name: string });
    expect(ruleRefs.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: 'corp' },
      { name: 'corp' },
      { name: 'office-berlin' },
    ]);
    expect(named('WeightedBackend', '90-10-canary-split')!.spec!.backends).toEqual([
      { backendRef: { kind: 'TunnelGroupBackend', name: 'web' }, weight: 90 },
      {
        backendRef: { kind: 'TunnelGroupBackend', name: expect.stringMatching(/^tunnelgroupbackend-/) },
        weight: 10,
      },
    ]);
    const routes = objs.filter((o) => o.kind === 'HTTPSEdgeRoute');
    const root = routes.find(
      (o) => o.spec!.match === '/' && (o.spec!.edgeRef as { name: string }).name === 'public-app',
    )!;
    expect(root.spec).toMatchObject({
      edgeRef: { name: 'public-app' },
      backend: { backendRef: { kind: 'WeightedBackend', name: '90-10-canary-split' } },
      ipRestriction: { ipPolicyRefs: [{ name: 'corp' }] },
      oidc: {
        clientID: 'edge-app',
        clientSecretRef: { name: `httpsedgeroute-${root.metadata.name}`, key: 'oidc-client-secret' },
      },
    });
    // each login module on an edge of its own (the API takes one per edge, OAuth on '/' only)
    expect(named('HTTPSEdgeRoute', 'login')?.spec).toMatchObject({
      edgeRef: { name: 'login' },
      match: '/',
      oauth: {
        provider: {
          github: {
            clientID: 'gh-app',
            clientSecretRef: { name: 'httpsedgeroute-login', key: 'oauth-client-secret' },
          },
        },
      },
    });
    expect(routes.find((o) => o.spec!.saml)?.spec).toMatchObject({ edgeRef: { name: 'sso' }, match: '/sso' });
    expect(
      routes
        .filter((o) => ['oauth', 'saml', 'oidc'].some((m) => o.spec![m]))
        .map((o) => (o.spec!.edgeRef as { name: string }).name)
        .sort(),
    ).toEqual(['login', 'public-app', 'sso']);
    expect(
      named('IPRestriction', objs.find((o) => o.kind === 'IPRestriction')!.metadata.name)?.spec,
    ).toMatchObject({
      type: 'dashboard',
      enforced: true,
      ipPolicyRefs: [{ name: 'corp' }, { name: 'office-berlin' }],
    });
  });

  it('keeps ids of what no kind manages (certificate authorities)', async () => {
    const r = await run('-o', 'yaml');
    expect(r.docs.find((o) => o.metadata.name === 'mtls')?.spec).toEqual({
      description: 'mtls',
      hostports: ['mtls.example.com:443'],
      mutualTLS: { certificateAuthorityIDs: [account.ca] },
      tlsTermination: { minVersion: '1.3' },
    });
  });

  it('skips and names what another installation manages', async () => {
    const r = await run('-o', 'yaml');
    expect(r.out).not.toContain(account.foreign);
    expect(r.err).toContain(`IPPolicy ${account.foreign} (cluster other-cluster, IPPolicy/prod/theirs)`);
  });

  it('writes no secret value without --include-secrets, and names the Secrets to create', async () => {
    const r = await run('-o', 'yaml');
    for (const v of Object.values(SECRETS)) {
      expect(r.out).not.toContain(v);
      expect(r.err).not.toContain(v);
    }
    expect(r.docs.some((o) => o.kind === 'Secret')).toBe(false);
    expect(r.err).toMatch(/warning: these Secrets are referenced but not written.*httpsedgeroute-/);
    const withSecrets = await run('-o', 'yaml', '--include-secrets');
    const secrets = withSecrets.docs.filter((o) => o.kind === 'Secret');
    expect(
      secrets.flatMap((s) => Object.values((s as unknown as { stringData: object }).stringData)).sort(),
    ).toEqual(Object.values(SECRETS).sort());
    expect(withSecrets.err).toMatch(/plain text/);
  });

  it('asks for exactly what the API holds: every field, module and secret compares equal', async () => {
    const result = await exportAccount(h.client, { includeSecrets: true });
    const byId = await remotes();
    const ids = new Map(
      result.objects.map((o) => [`${o.kind}/${o.metadata.name}`, o.metadata.annotations![ID_ANNOTATION]!]),
    );
    const secretValues = new Map(
      result.secrets.flatMap((s) =>
        Object.entries((s as unknown as { stringData: Record<string, string> }).stringData).map(([k, v]) => [
          `${s.metadata.name}/${k}`,
          v,
        ]),
      ),
    );
    const ref = (kind: string, name: string) => ids.get(`${kind}/${name}`)!;
    const secret = (name: string, key: string) => secretValues.get(`${name}/${key}`)!;
    for (const o of result.objects) {
      const b = BINDINGS.find((x) => x.kind === o.kind)!;
      const remote = byId.get(o.metadata.annotations![ID_ANNOTATION]!)!;
      const { description, metadata, ...own } = o.spec as Record<string, unknown>;
      expect(description ?? '', o.metadata.name).toBe(remote.description ?? '');
      expect(metadata ?? '', o.metadata.name).toBe(remote.metadata ?? '');
      // the spec is valid input for the CRD (the same zod the CRD schema comes from)
      const spec = b.spec.strict().parse(own);
      expect(b.desired(spec, ref), `${o.kind} ${o.metadata.name}`).toEqual(b.fromRemote(remote));
      for (const m of b.modules ?? []) {
        const want = m.desired(spec, ref, secret);
        const have = (remote as unknown as Record<string, Record<string, unknown> | null>)[m.name] ?? null;
        const where = `${o.kind} ${o.metadata.name} module ${m.name}`;
        if (!want) {
          expect(have, where).toBeNull();
          continue;
        }
        expect(have, where).not.toBeNull();
        const input = outputToInput(have!);
        expect(
          covers(withoutSecrets(want, m.secretPaths), withoutSecrets(input, m.secretPaths)),
          `${where}: ${JSON.stringify(want)} vs ${JSON.stringify(input)}`,
        ).toBe(true);
        expect(secretDigest(want, m.secretPaths, 'k', 'team'), where).toBe(
          secretDigest(input, m.secretPaths, 'k', 'team'),
        );
      }
    }
  });

  it('--observe writes objects that only observe their resource (managementPolicy: Observe)', async () => {
    const r = await run('-n', 'team', '-o', 'yaml', '--observe');
    expect(r.code).toBe(0);
    const docs = parseAllDocuments(r.out)
      .map((d) => d.toJS() as { kind?: string; spec?: { managementPolicy?: string } } | null)
      .filter((d) => d?.kind && d.kind !== 'Secret');
    expect(docs.length).toBeGreaterThan(5);
    for (const d of docs) expect(d!.spec?.managementPolicy, d!.kind).toBe('Observe');
  });

  it('--account names the account object in every spec (spec.accountRef); a malformed one is refused', async () => {
    const r = await run('-n', 'team', '-o', 'yaml', '--account', 'EdgeAccount/prod');
    expect(r.code, r.err).toBe(0);
    const docs = parseAllDocuments(r.out)
      .map((d) => d.toJS() as { kind?: string; spec?: { accountRef?: unknown } } | null)
      .filter((d) => d?.kind && d.kind !== 'Secret');
    expect(docs.length).toBeGreaterThan(5);
    for (const d of docs) expect(d!.spec?.accountRef, d!.kind).toEqual({ kind: 'EdgeAccount', name: 'prod' });
    const bad = await run('-n', 'team', '-o', 'yaml', '--account', 'Secret/prod');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain(
      '--account: "Secret/prod" is not EdgeAccount/<name> or ClusterEdgeAccount/<name>',
    );
  });

  it('is stable: a second export is identical', async () => {
    const a = await run('-n', 'team', '-o', 'yaml', '--include-secrets');
    const b = await run('-n', 'team', '-o', 'yaml', '--include-secrets');
    expect(isDeepStrictEqual(a.out, b.out)).toBe(true);
  });

  it('writes a directory kubectl apply -k takes, and a narrower re-export replaces it', async () => {
    const dir = scratchDir('edge-export-');
    writeFileSync(join(dir, 'README.md'), 'mine');
    const r = await run('--output-dir', dir);
    expect(r.code, r.err).toBe(0);
    const files = readdirSync(dir).sort();
    expect(files).toEqual(
      ['README.md', 'kustomization.yaml', ...BINDINGS.map((b) => `${b.plural}.yaml`)].sort(),
    );
    const k = parseAllDocuments(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'))[0]!.toJS();
    expect(k.resources.sort()).toEqual(BINDINGS.map((b) => `${b.plural}.yaml`).sort());
    await run('--output-dir', dir, '--kinds', 'IPPolicy,IPPolicyRule');
    expect(readdirSync(dir).sort()).toEqual([
      'README.md',
      'ippolicies.yaml',
      'ippolicyrules.yaml',
      'kustomization.yaml',
    ]);
  });

  it('a re-export leaves the files of yours (lower-case YAML too) and a Secrets file it does not rewrite, still listed', async () => {
    const dir = scratchDir('edge-export-');
    expect((await run('--output-dir', dir, '--include-secrets')).code).toBe(0);
    expect(statSync(join(dir, 'secrets.yaml')).mode & 0o777).toBe(0o600);
    writeFileSync(join(dir, 'namespace.yaml'), 'mine');
    // the Secrets encrypted in place since (SOPS): a plain export must not replace or drop them
    const encrypted = 'apiVersion: v1\nkind: Secret\nsops:\n  version: 3.9.0\n';
    writeFileSync(join(dir, 'secrets.yaml'), encrypted, { mode: 0o644 });
    expect((await run('--output-dir', dir)).code).toBe(0);
    expect(readFileSync(join(dir, 'namespace.yaml'), 'utf8')).toBe('mine');
    expect(readFileSync(join(dir, 'secrets.yaml'), 'utf8')).toBe(encrypted);
    const k = parseAllDocuments(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'))[0]!.toJS();
    expect(k.resources).toContain('secrets.yaml');
    // and with --include-secrets it refuses, in one line, rather than write plain text over it
    const r = await run('--output-dir', dir, '--include-secrets');
    expect(r.code).toBe(2);
    expect(r.err.trim()).toMatch(/^error: \S+secrets\.yaml is encrypted \(SOPS\): not overwriting it/);
    expect(readFileSync(join(dir, 'secrets.yaml'), 'utf8')).toBe(encrypted);
    // a plain Secrets file another tool made world-readable: rewritten readable by its owner alone
    writeFileSync(join(dir, 'secrets.yaml'), 'old', { mode: 0o644 });
    expect((await run('--output-dir', dir, '--include-secrets')).code).toBe(0);
    expect(statSync(join(dir, 'secrets.yaml')).mode & 0o777).toBe(0o600);
  });

  it('names what it wrote that the CRDs would refuse (metadata the API takes, above what a CRD admits)', async () => {
    // the API keeps 4,096 bytes of metadata; the CRD leaves room for the operator's owner marker
    const big = await h.client.ipPolicies.create({ description: 'big metadata', metadata: 'm'.repeat(3500) });
    try {
      const r = await run('-n', 'team', '-o', 'yaml', '--kinds', 'IPPolicy');
      expect(r.code, r.err).toBe(0);
      expect(r.docs.some((o) => o.metadata.name === 'big-metadata')).toBe(true);
      expect(r.err).toContain('export: warning: 1 objects exceed what the CRDs admit');
      expect(r.err).toMatch(/ {2}IPPolicy big-metadata: spec\.metadata: /);
      expect(r.err).not.toMatch(/IPPolicy corp:/);
    } finally {
      await h.client.ipPolicies.delete(big.id);
    }
  });

  it('refuses an unknown kind, two outputs and a rate that is not a whole number, in one line each', async () => {
    const bad = await run('--kinds', 'Ingress', '-o', 'yaml');
    expect(bad.code).toBe(2);
    expect(bad.err.trim()).toMatch(/^error: unknown kind Ingress \(one of IPPolicy, /);
    const both = await run('--output-dir', '/tmp/x', '-o', 'yaml');
    expect(both.code).toBe(2);
    expect(both.err.trim().split('\n')).toHaveLength(1);
    for (const rate of ['0', '1.5', 'fast']) {
      const r = await run('-o', 'yaml', '--api-rate-limit', rate);
      expect(r.code, rate).toBe(2);
      expect(r.err.trim(), rate).toBe(`error: --api-rate-limit: "${rate}" is not a whole number > 0`);
    }
  });
});

describe('edgectl export --owned-by', () => {
  // a lost cluster's installation (cluster id "lost") left these in its own account: its
  // objects' kinds, namespaces and names live on in the owner markers
  let lost: Harness;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    lost = await emulatorWithClient();
    const c = lost.client;
    const marker = (object: string) => encodeMetadata({ cluster: 'lost', uid: `u-${object}`, object }, '');
    const corp = await c.ipPolicies.create({
      description: 'office',
      metadata: marker('IPPolicy/team-a/corp'),
    });
    ids.corp = corp.id;
    ids.sameNs = (
      await c.ipPolicyRules.create({
        ip_policy_id: corp.id,
        cidr: '10.0.0.0/8',
        action: 'allow',
        metadata: marker('IPPolicyRule/team-a/office'),
      })
    ).id;
    ids.otherNs = (
      await c.ipPolicyRules.create({
        ip_policy_id: corp.id,
        cidr: '192.168.0.0/16',
        action: 'allow',
        metadata: marker('IPPolicyRule/team-b/vpn'),
      })
    ).id;
    // unmanaged, and another installation's: neither is the lost cluster's
    ids.unmanaged = (await c.ipPolicies.create({ description: 'by hand' })).id;
    ids.foreign = (
      await c.ipPolicies.create({
        description: 'theirs',
        metadata: encodeMetadata({ cluster: 'live', uid: 'u-1', object: 'IPPolicy/prod/theirs' }, ''),
      })
    ).id;
  });
  afterAll(() => lost?.close());

  const exportLost = (...args: string[]) => runOn(lost, ...args);
  const place = (o: KubeObject) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;

  it("writes that installation's objects back under their own kinds, namespaces and names", async () => {
    const r = await exportLost('--owned-by', 'lost', '-o', 'yaml');
    expect(r.code).toBe(0);
    expect(r.docs.map(place).sort()).toEqual([
      'IPPolicy/team-a/corp',
      'IPPolicyRule/team-a/office',
      'IPPolicyRule/team-b/vpn',
    ]);
    const byPlace = new Map(r.docs.map((o) => [place(o), o]));
    expect(byPlace.get('IPPolicy/team-a/corp')!.metadata.annotations).toEqual({ [ID_ANNOTATION]: ids.corp });
    // a reference within the namespace is the object's name; across namespaces, the id
    expect(byPlace.get('IPPolicyRule/team-a/office')!.spec).toMatchObject({ ipPolicyRef: { name: 'corp' } });
    expect(byPlace.get('IPPolicyRule/team-b/vpn')!.spec).toMatchObject({ ipPolicyID: ids.corp });
    expect(byPlace.get('IPPolicyRule/team-b/vpn')!.spec).not.toHaveProperty('ipPolicyRef');
    // neither what no installation manages nor another installation's
    const out = JSON.stringify(r.docs);
    expect(out).not.toContain(ids.unmanaged);
    expect(out).not.toContain(ids.foreign);
    expect(r.err).toContain(`IPPolicy ${ids.foreign} (cluster live, IPPolicy/prod/theirs)`);
  });

  it('-n puts them all in one namespace (references across the old namespaces become names there)', async () => {
    const r = await exportLost('--owned-by', 'lost', '-n', 'restore', '-o', 'yaml');
    expect(r.docs.map(place).sort()).toEqual([
      'IPPolicy/restore/corp',
      'IPPolicyRule/restore/office',
      'IPPolicyRule/restore/vpn',
    ]);
    for (const rule of r.docs.filter((o) => o.kind === 'IPPolicyRule'))
      expect(rule.spec).toMatchObject({ ipPolicyRef: { name: 'corp' } });
  });

  it('without --owned-by, none of them; a malformed cluster id is a usage error', async () => {
    const r = await exportLost('-o', 'yaml');
    expect(r.docs.map((o) => o.metadata.annotations?.[ID_ANNOTATION])).toEqual([ids.unmanaged]);
    const bad = await exportLost('--owned-by', 'two words', '-o', 'yaml');
    expect(bad.code).toBe(2);
    expect(bad.err.trim()).toBe(
      'error: --owned-by: "two words" is not a cluster id (printable ASCII without spaces, at most 63 characters: the chart\'s clusterId, or the uid of kube-system)',
    );
  });
});
