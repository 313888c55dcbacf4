// The Kubernetes client against a real HTTP server on loopback: what a user notices is that
// the operator waits out an API server restart at start-up instead of exiting, and reads
// the API server's own error message.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { isTransient, Kube, KubeError, whileTransient } from '../../src/operator/runtime/kube/kube.ts';

let server: Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

const agent = new Agent();
const kubeAt = (port: number) =>
  new Kube({
    server: `http://127.0.0.1:${port}`,
    context: 'test',
    auth: async () => ({ headers: {}, dispatcher: agent }),
  });
const listen = (handler: RequestListener) =>
  new Promise<number>((resolve) => {
    server = createServer(handler).listen(0, '127.0.0.1', () =>
      resolve((server!.address() as AddressInfo).port),
    );
  });

describe('kube client errors', () => {
  it('a refused connection (the API server restarting) is transient', async () => {
    const port = await listen(() => {});
    await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;
    const err = await kubeAt(port)
      .get({ group: '', version: 'v1', plural: 'secrets' }, 'ns', 'x')
      .catch((e: unknown) => e);
    expect(isTransient(err)).toBe(true);
  });

  it('a 503 is transient, a 404 is an answer with the server message', async () => {
    let status = 503;
    const port = await listen((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', message: 'secrets "x" not found', reason: 'NotFound' }));
    });
    const get = () =>
      kubeAt(port)
        .get({ group: '', version: 'v1', plural: 'secrets' }, 'ns', 'x')
        .catch((e: unknown) => e as KubeError);
    expect(isTransient(await get())).toBe(true);
    status = 404;
    const e = await get();
    expect(e).toBeInstanceOf(KubeError);
    expect(isTransient(e)).toBe(false);
    expect(e.message).toContain('secrets "x" not found');
    expect(e.reason).toBe('NotFound');
  });
});

describe('a start-up read while the service account is refused', () => {
  const secrets = { group: '', version: 'v1', plural: 'secrets' };
  /** A server that refuses the first `refusals` requests with 403, then answers. */
  const refusing = async (refusals: number) => {
    let seen = 0;
    const port = await listen((_req, res) => {
      const refuse = seen++ < refusals;
      res.writeHead(refuse ? 403 : 200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          refuse
            ? {
                kind: 'Status',
                reason: 'Forbidden',
                message:
                  'secrets "key" is forbidden: User "system:serviceaccount:ops:edge" cannot get resource "secrets"',
              }
            : { metadata: { name: 'key' } },
        ),
      );
    });
    return { read: () => kubeAt(port).get(secrets, 'ops', 'key'), seen: () => seen };
  };

  it('is read once RBAC lets it through, within the time given for that', async () => {
    const s = await refusing(2);
    const retried: string[] = [];
    const got = await whileTransient('digest key', s.read, (_w, e) => retried.push(e.message), {
      refusedForMs: 5_000,
    });
    expect(got.metadata.name).toBe('key');
    expect(retried).toHaveLength(2);
    expect(retried[0]).toContain('cannot get resource "secrets"');
  });

  it('fails at once without that time (a command run by a user), and after it when the refusal lasts', async () => {
    const s = await refusing(1_000);
    const at = Date.now();
    await expect(whileTransient('digest key', s.read, () => {})).rejects.toMatchObject({ status: 403 });
    expect(s.seen()).toBe(1);
    await expect(whileTransient('digest key', s.read, () => {}, { refusedForMs: 600 })).rejects.toThrow(
      /forbidden/,
    );
    // 250 + 500 ms of backoff fit in 600 ms only once: two more requests, then the error
    expect(s.seen()).toBe(3);
    expect(Date.now() - at).toBeLessThan(2_000);
  });
});

describe('kube client watch', () => {
  const namespaces = { group: '', version: 'v1', plural: 'namespaces' };
  const event = (name: string) => `${JSON.stringify({ type: 'ADDED', object: { metadata: { name } } })}\n`;

  it('reads every event however the stream is cut: one split over writes, two in one write, a multi-byte character split', async () => {
    const port = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const one = event('é-split');
      const bytes = Buffer.from(one);
      const cut = bytes.indexOf(Buffer.from('é')) + 1; // inside the two bytes of é
      res.write(bytes.subarray(0, cut));
      setTimeout(() => {
        res.write(bytes.subarray(cut));
        res.write(event('b') + event('c'));
        res.end();
      }, 50);
    });
    const names: string[] = [];
    await kubeAt(port).watch(namespaces, undefined, '1', (e) => names.push(e.object.metadata.name), {
      signal: new AbortController().signal,
      idleMs: 5000,
      timeoutSeconds: 10,
    });
    expect(names).toEqual(['é-split', 'b', 'c']);
  });

  it('a watch silent past the idle watchdog is cut, also after events arrived', async () => {
    const port = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(event('a'));
      setTimeout(() => res.write(event('b')), 150);
      // and then nothing, the connection open
    });
    const names: string[] = [];
    const started = Date.now();
    const err = await kubeAt(port)
      .watch(namespaces, undefined, '1', (e) => names.push(e.object.metadata.name), {
        signal: new AbortController().signal,
        idleMs: 300,
        timeoutSeconds: 10,
      })
      .catch((e: unknown) => e as Error);
    expect(names).toEqual(['a', 'b']);
    // cut 300 ms after the last event, not after the first
    expect(Date.now() - started).toBeGreaterThanOrEqual(440);
    expect(String(err)).toMatch(/watch idle for 300ms/);
  });
});
