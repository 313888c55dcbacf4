// Credentials through @kubernetes/client-node's KubeConfig, as users' kubeconfigs hold them:
// tokens, token files, basic auth, impersonation, several files in $KUBECONFIG, exec plugins
// (refresh when expired, a failure that says which plugin without its output), a proxy-url;
// the pod's service account, read by the project (its CA trusted, its token rotated); and
// clear errors for what cannot work.
// Client certificates are exercised against the real API server by every e2e test.
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPki } from '../../src/localcluster/certs.ts';
import { Kube, loadKubeConfig } from '../../src/operator/runtime/kube/kube.ts';
import { scratchDir } from '../support/scratch.ts';

const dir = () => scratchDir('kc-');
const env = { ...process.env };
let server: Server | undefined;
afterEach(async () => {
  process.env = { ...env };
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

function file(
  d: string,
  name: string,
  users: string,
  o: { current?: string; cluster?: string; server?: string; clusterExtra?: string } = {},
) {
  const p = join(d, name);
  const cluster = o.cluster ?? 'c';
  writeFileSync(
    p,
    `apiVersion: v1
kind: Config
clusters: [{name: ${cluster}, cluster: {server: "${o.server ?? 'https://k8s.example:6443/'}", insecure-skip-tls-verify: true${o.clusterExtra ?? ''}}}]
contexts: [{name: ${o.current ?? 'ctx'}, context: {cluster: ${cluster}, user: u}}]
users: [{name: u, user: ${users}}]
current-context: ${o.current ?? 'ctx'}
`,
  );
  return p;
}
const headers = async (p?: string) => (await (await loadKubeConfig(p)).auth()).headers;

describe('kubeconfig through client-node', () => {
  it('a token, a token file relative to the kubeconfig, basic auth, impersonation', async () => {
    const d = dir();
    expect(await headers(file(d, 'a', '{token: abc}'))).toEqual({ authorization: 'Bearer abc' });
    writeFileSync(join(d, 'tok'), 'from-file\n');
    const t = await loadKubeConfig(file(d, 'b', '{token-file: tok}'));
    expect((await t.auth()).headers).toEqual({ authorization: 'Bearer from-file' });
    expect(t.server).toBe('https://k8s.example:6443');
    expect(t.context).toBe('ctx');
    expect((await headers(file(d, 'c', '{username: me, password: pw}'))).authorization).toBe(
      `Basic ${Buffer.from('me:pw').toString('base64')}`,
    );
    expect(await headers(file(d, 'd', '{token: abc, as: admin}'))).toEqual({
      authorization: 'Bearer abc',
      'impersonate-user': 'admin',
    });
  });

  it('runs an exec credential plugin once and reuses its token until it expires, then runs it again', async () => {
    const d = dir();
    const plugin = join(d, 'plugin.sh');
    const count = join(d, 'count');
    const expires = join(d, 'expires');
    writeFileSync(expires, '2999-01-01T00:00:00Z');
    writeFileSync(
      plugin,
      `#!/bin/sh\necho x >> ${count}\nn=$(wc -l < ${count})\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"'$TOKEN_PREFIX'-'$n'","expirationTimestamp":"'$(cat ${expires})'"}}'\n`,
    );
    chmodSync(plugin, 0o755);
    const t = await loadKubeConfig(
      file(
        d,
        'a',
        `{exec: {apiVersion: client.authentication.k8s.io/v1, command: ${plugin}, args: [], env: [{name: TOKEN_PREFIX, value: cloud}]}}`,
      ),
    );
    expect((await t.auth()).headers).toEqual({ authorization: 'Bearer cloud-1' });
    await t.auth();
    expect(readFileSync(count, 'utf8').trim().split('\n')).toHaveLength(1);
    // a credential that has expired is fetched again: the refreshed token is used at once
    writeFileSync(expires, '2000-01-01T00:00:00Z');
    const t2 = await loadKubeConfig(
      file(d, 'b', `{exec: {apiVersion: client.authentication.k8s.io/v1, command: ${plugin}, args: []}}`),
    );
    expect((await t2.auth()).headers.authorization).toBe('Bearer -2');
    expect((await t2.auth()).headers.authorization).toBe('Bearer -3');
  });

  it('an exec plugin that fails names the plugin, never what it printed', async () => {
    const d = dir();
    const plugin = join(d, 'fail.sh');
    writeFileSync(plugin, '#!/bin/sh\necho "token super-secret-123 rejected" >&2\nexit 3\n');
    chmodSync(plugin, 0o755);
    const t = await loadKubeConfig(
      file(d, 'a', `{exec: {apiVersion: client.authentication.k8s.io/v1, command: ${plugin}, args: []}}`),
    );
    const err = (await t.auth().catch((e) => e)) as Error;
    expect(err.message).toBe(
      `kubeconfig user u: exec credential plugin ${plugin} failed; run it by hand to see why`,
    );
    expect(err.message).not.toContain('super-secret');
  });

  it('merges the files of $KUBECONFIG: the first current-context and the first entry of a name win', async () => {
    const d = dir();
    const a = file(d, 'a', '{token: first}', { current: 'ctx' });
    const b = file(d, 'b', '{token: second}', { current: 'other' });
    process.env.KUBECONFIG = `${a}:${b}`;
    const t = await loadKubeConfig();
    expect(t.context).toBe('ctx');
    expect((await t.auth()).headers).toEqual({ authorization: 'Bearer first' });
  });

  it('goes through the proxy-url of the cluster', async () => {
    const seen: string[] = [];
    // a forward proxy that answers for the API server itself
    server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ metadata: { name: 'kube-system', uid: 'u1' } }));
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    const d = dir();
    const kube = new Kube(
      await loadKubeConfig(
        file(d, 'a', '{token: abc}', {
          server: 'http://api.cluster.invalid:8080',
          clusterExtra: `, proxy-url: "http://127.0.0.1:${port}"`,
        }),
      ),
    );
    const ns = await kube.get({ group: '', version: 'v1', plural: 'namespaces' }, undefined, 'kube-system');
    expect(ns.metadata.uid).toBe('u1');
    expect(seen).toEqual(['GET http://api.cluster.invalid:8080/api/v1/namespaces/kube-system']);
  });

  it('says what is wrong with a kubeconfig that cannot work', async () => {
    const d = dir();
    await expect(loadKubeConfig(join(d, 'missing'))).rejects.toThrow(/no kubeconfig at .*missing/);
    const p = join(d, 'nocurrent');
    writeFileSync(p, 'apiVersion: v1\nkind: Config\nclusters: []\n');
    await expect(loadKubeConfig(p)).rejects.toThrow(/has no current-context/);
    writeFileSync(p, 'apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts: []\n');
    await expect(loadKubeConfig(p)).rejects.toThrow(/context x is not defined/);
    writeFileSync(p, 'apiVersion: v1\nkind: Config\nclusters: [: :\n');
    await expect(loadKubeConfig(p)).rejects.toThrow(/^kubeconfig .*nocurrent: /);
  });
});

describe("the pod's service account (read without client-node)", () => {
  function serviceAccount(token: string, ca: string) {
    const d = dir();
    writeFileSync(join(d, 'token'), token);
    writeFileSync(join(d, 'ca.crt'), ca);
    delete process.env.KUBECONFIG;
    process.env.EDGE_SERVICE_ACCOUNT_DIR = d;
    return d;
  }

  it('talks HTTPS to $KUBERNETES_SERVICE_HOST trusting ca.crt, with the token re-read once rotated', async () => {
    const pki = await createPki();
    const seen: (string | undefined)[] = [];
    const tls = createHttpsServer({ cert: pki.serving.cert, key: pki.serving.key }, (req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ metadata: { name: 'kube-system', uid: 'u1' } }));
    });
    server = tls;
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', () => r()));
    const d = serviceAccount('sa-token-1\n', pki.ca.cert);
    process.env.KUBERNETES_SERVICE_HOST = '127.0.0.1';
    process.env.KUBERNETES_SERVICE_PORT = String((tls.address() as AddressInfo).port);
    const t = await loadKubeConfig();
    expect(t.context).toBe('(in-cluster)');
    expect(t.server).toBe(`https://127.0.0.1:${process.env.KUBERNETES_SERVICE_PORT}`);
    const kube = new Kube(t);
    const namespaces = { group: '', version: 'v1', plural: 'namespaces' };
    expect((await kube.get(namespaces, undefined, 'kube-system')).metadata.uid).toBe('u1');
    // the kubelet rotates the token: used from the next second on
    writeFileSync(join(d, 'token'), 'sa-token-2');
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 1_100);
      await kube.get(namespaces, undefined, 'kube-system');
    } finally {
      vi.useRealTimers();
    }
    expect(seen).toEqual(['Bearer sa-token-1', 'Bearer sa-token-2']);
    // another CA's server is not trusted
    writeFileSync(join(d, 'ca.crt'), (await createPki()).ca.cert);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 2_200);
      const err = (await kube.get(namespaces, undefined, 'kube-system').catch((e) => e)) as Error & {
        code?: string;
      };
      expect(`${err.code} ${err.message}`).toMatch(/CERT|certificate/i);
    } finally {
      vi.useRealTimers();
    }
    expect(seen).toHaveLength(2);
  });

  it('brackets an IPv6 service address and says which file is missing or empty', async () => {
    const d = serviceAccount('', '');
    process.env.KUBERNETES_SERVICE_HOST = 'fd00::1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    const t = await loadKubeConfig();
    expect(t.server).toBe('https://[fd00::1]:443');
    await expect(t.auth()).rejects.toThrow(
      `in-cluster: the service account token at ${join(d, 'token')} is empty`,
    );
    rmSync(join(d, 'token'));
    await expect(loadKubeConfig()).rejects.toThrow(
      new RegExp(`^in-cluster: cannot read the service account token at ${join(d, 'token')}: ENOENT`),
    );
  });

  it('a kubeconfig named wins over the service account', async () => {
    serviceAccount('sa-token', '');
    process.env.KUBERNETES_SERVICE_HOST = '10.96.0.1';
    const d = dir();
    const t = await loadKubeConfig(file(d, 'a', '{token: abc}'));
    expect(t.context).toBe('ctx');
    expect((await t.auth()).headers).toEqual({ authorization: 'Bearer abc' });
  });
});
