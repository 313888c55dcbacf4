// A leader whose renewals go unanswered (a hung API server, a connection that silently stopped
// carrying packets) steps down at the renew deadline, not when the request times out: a standby
// takes over once the lease runs out, and two leaders must not write meanwhile. The API server
// here is a loopback one holding a single Lease, which stops answering on cue.
import { createServer, type Server } from 'node:http';
import pino from 'pino';
import { Agent } from 'undici';
import { afterEach, expect, it } from 'vitest';
import { Kube } from '../../src/operator/runtime/kube.ts';
import { LeaderElector } from '../../src/operator/runtime/leader.ts';

let server: Server | undefined;
let elector: LeaderElector | undefined;
const agent = new Agent();
afterEach(() => {
  void elector?.release();
  server?.closeAllConnections();
  server?.close();
});

/** One Lease over HTTP (GET, POST, PUT); with `hang`, requests are taken and never answered. */
async function leaseServer() {
  const state = { hang: false, lease: undefined as unknown, version: 0 };
  server = createServer((req, res) => {
    if (state.hang) return;
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method === 'GET' && !state.lease) {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound' }));
      }
      if (req.method !== 'GET') {
        const o = JSON.parse(body);
        state.lease = { ...o, metadata: { ...o.metadata, resourceVersion: String(++state.version) } };
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(state.lease));
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server!.address() as { port: number }).port}`;
  const kube = new Kube({
    server: url,
    context: 'test',
    auth: async () => ({ headers: {}, dispatcher: agent }),
  });
  return { state, kube };
}

it('a leader whose renewals hang steps down at the renew deadline, not when the request gives up', async () => {
  const { state, kube } = await leaseServer();
  elector = new LeaderElector({
    kube,
    namespace: 'ns',
    name: 'op',
    identity: 'a',
    log: pino({ level: 'silent' }),
    leaseDurationMs: 3000,
    renewDeadlineMs: 1000,
    retryPeriodMs: 200,
  });
  let lostAt: number | undefined;
  await elector.acquire(() => (lostAt = Date.now()));
  expect(elector.isLeader).toBe(true);
  // renewals go through for a while
  await new Promise((r) => setTimeout(r, 600));
  expect(lostAt).toBeUndefined();
  const hungAt = Date.now();
  state.hang = true;
  await new Promise((r) => setTimeout(r, 2500));
  // the last renewal was at most a retry period before the hang: lost within the deadline of it
  expect(lostAt).toBeDefined();
  expect(lostAt! - hungAt).toBeLessThan(1000 + 300);
  expect(elector.isLeader).toBe(false);
});
