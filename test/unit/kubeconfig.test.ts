// Kubeconfig loading without @kubernetes/client-node: the shapes platform teams have
// (tokens, token files, exec plugins of cloud CLIs, several files in $KUBECONFIG, the pod's
// service account), and clear errors for what cannot work. Client certificates are
// exercised against the real API server by every e2e test.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../src/operator/runtime/kubeconfig.ts';
import { scratchDir } from '../support/scratch.ts';

const dir = () => scratchDir('kc-');
const env = { ...process.env };
afterEach(() => {
  process.env = { ...env };
});

function file(d: string, name: string, users: string, current = 'ctx', cluster = 'c') {
  const p = join(d, name);
  writeFileSync(
    p,
    `apiVersion: v1
kind: Config
clusters: [{name: ${cluster}, cluster: {server: "https://k8s.example:6443/", insecure-skip-tls-verify: true}}]
contexts: [{name: ${current}, context: {cluster: ${cluster}, user: u}}]
users: [{name: u, user: ${users}}]
current-context: ${current}
`,
  );
  return p;
}

describe('kubeconfig', () => {
  it('a token, a token file relative to the kubeconfig, basic auth', async () => {
    const d = dir();
    expect(await loadKubeConfig(file(d, 'a', '{token: abc}')).headers()).toEqual({
      authorization: 'Bearer abc',
    });
    writeFileSync(join(d, 'tok'), 'from-file\n');
    const t = loadKubeConfig(file(d, 'b', '{tokenFile: tok}'));
    expect(await t.headers()).toEqual({ authorization: 'Bearer from-file' });
    expect(t.server).toBe('https://k8s.example:6443');
    expect(t.context).toBe('ctx');
    expect((await loadKubeConfig(file(d, 'c', '{username: me, password: pw}')).headers()).authorization).toBe(
      `Basic ${Buffer.from('me:pw').toString('base64')}`,
    );
  });

  it('runs an exec credential plugin once and reuses its token until it expires', async () => {
    const d = dir();
    const plugin = join(d, 'plugin.sh');
    const count = join(d, 'count');
    writeFileSync(
      plugin,
      `#!/bin/sh\necho x >> ${count}\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"'$TOKEN_PREFIX'-tok","expirationTimestamp":"2999-01-01T00:00:00Z"}}'\n`,
    );
    chmodSync(plugin, 0o755);
    const t = loadKubeConfig(
      file(d, 'a', `{exec: {command: ${plugin}, args: [], env: [{name: TOKEN_PREFIX, value: cloud}]}}`),
    );
    expect(await t.headers()).toEqual({ authorization: 'Bearer cloud-tok' });
    await t.headers();
    await t.dispatcher();
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(count, 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('merges the files of $KUBECONFIG: the first current-context and the first entry of a name win', async () => {
    const d = dir();
    const a = file(d, 'a', '{token: first}', 'ctx');
    const b = file(d, 'b', '{token: second}', 'other');
    process.env.KUBECONFIG = `${a}:${b}`;
    const t = loadKubeConfig();
    expect(t.context).toBe('ctx');
    expect(await t.headers()).toEqual({ authorization: 'Bearer first' });
  });

  it("uses the pod's service account in a cluster, re-reading the rotated token", async () => {
    const d = dir();
    writeFileSync(join(d, 'token'), 'sa-token');
    writeFileSync(join(d, 'ca.crt'), '');
    delete process.env.KUBECONFIG;
    process.env.KUBERNETES_SERVICE_HOST = '10.96.0.1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    process.env.EDGE_SERVICE_ACCOUNT_DIR = d;
    const t = loadKubeConfig();
    expect(t.server).toBe('https://10.96.0.1:443');
    expect(t.context).toBe('(in-cluster)');
    expect(await t.headers()).toEqual({ authorization: 'Bearer sa-token' });
  });

  it('says what is wrong with a kubeconfig that cannot work', () => {
    const d = dir();
    expect(() => loadKubeConfig(join(d, 'missing'))).toThrow(/no kubeconfig at .*missing/);
    expect(() => loadKubeConfig(file(d, 'a', '{auth-provider: {name: gcp}}'))).toThrow(
      /auth-provider gcp is not supported; use an exec credential plugin/,
    );
    const p = join(d, 'nocurrent');
    writeFileSync(p, 'apiVersion: v1\nkind: Config\nclusters: []\n');
    expect(() => loadKubeConfig(p)).toThrow(/has no current-context/);
    writeFileSync(p, 'apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts: []\n');
    expect(() => loadKubeConfig(p)).toThrow(/context x is not defined/);
  });
});
