// A leader whose renewals go unanswered (a hung API server, a connection that silently stopped
// carrying packets) steps down at the renew deadline, not when the request times out: a standby
// takes over once the lease runs out, and two leaders must not write meanwhile. The API server
// here is a loopback one holding a single Lease, which stops answering on cue.
import { createServer, type Server } from 'node:http';
import pino from 'pino';
import { Agent } from 'undici';
import { afterEach, expect, it } from 'vitest';
import { Kube } from '../../src/operator/runtime/kube/kube.ts';
import { LeaderElector, type LeaderOptions } from '../../src/operator/runtime/kube/leader.ts';

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
  const state = {
    /** Every request refused 403, as without RBAC on leases. */
    forbidden: false,
    hang: false,
    lease: undefined as unknown,
    version: 0,
    /** Writes wait for this before they are answered. */
    writesWait: Promise.resolve(),
  };
  server = createServer((req, res) => {
    if (state.hang) return;
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      if (state.forbidden) {
        res.writeHead(403, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'leases is forbidden' }),
        );
      }
      if (req.method !== 'GET') await state.writesWait;
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

/** An elector on the Lease `ns/op`, with short timings: 3 s lease, 1 s renew deadline. */
const elect = (kube: Kube, identity: string, o: Partial<LeaderOptions> = {}) =>
  new LeaderElector({
    kube,
    namespace: 'ns',
    name: 'op',
    identity,
    log: pino({ level: 'silent' }),
    leaseDurationMs: 3000,
    renewDeadlineMs: 1000,
    retryPeriodMs: 200,
    ...o,
  });

it('a leader whose renewals hang steps down at the renew deadline, not when the request gives up', async () => {
  const { state, kube } = await leaseServer();
  elector = elect(kube, 'a');
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

it('a Lease deleted by hand: the live leader recreates it and the standby does not lead beside it', async () => {
  const { state, kube } = await leaseServer();
  // the leader renews every 400 ms, the standby looks every 50 ms: it finds the Lease gone first
  elector = elect(kube, 'a', { retryPeriodMs: 400 });
  await elector.acquire(() => {});
  const standby = elect(kube, 'b', { retryPeriodMs: 50 });
  let bLeads = false;
  void standby.acquire(() => {}).then(() => (bLeads = standby.isLeader));
  await new Promise((r) => setTimeout(r, 500)); // b has seen a renewing
  state.lease = undefined; // kubectl delete lease
  await new Promise((r) => setTimeout(r, 1500));
  expect((state.lease as { spec: { holderIdentity: string } }).spec.holderIdentity).toBe('a');
  expect(elector.isLeader).toBe(true);
  expect(bLeads || standby.isLeader).toBe(false);
  await standby.release();
});

it('a leader that finds another replica holding the lease steps down at once, not at the renew deadline', async () => {
  const { state, kube } = await leaseServer();
  elector = elect(kube, 'a');
  let lostAt: number | undefined;
  await elector.acquire(() => (lostAt = Date.now()));
  const takenAt = Date.now();
  const lease = state.lease as { spec: Record<string, unknown> };
  state.lease = {
    ...lease,
    spec: { ...lease.spec, holderIdentity: 'b', renewTime: new Date().toISOString() },
  };
  await new Promise((r) => setTimeout(r, 700));
  expect(lostAt).toBeDefined();
  expect(lostAt! - takenAt).toBeLessThan(500);
  expect(elector.isLeader).toBe(false);
});

it('a replica stopped (SIGTERM) while its taking of the lease is in flight hands the lease on at once', async () => {
  const { state, kube } = await leaseServer();
  let letGo!: () => void;
  state.writesWait = new Promise((r) => (letGo = r));
  elector = elect(kube, 'b');
  const acquiring = elector.acquire(() => {});
  await new Promise((r) => setTimeout(r, 100)); // its create is on its way
  const released = elector.release();
  letGo();
  await acquiring;
  await released;
  // not held by a process that is going away: the next replica takes it at once
  expect((state.lease as { spec: { holderIdentity: string } }).spec.holderIdentity).toBe('');
  expect(elector.isLeader).toBe(false);
});

it('a replica the API server refuses the Lease (no RBAC on leases) fails, naming the Role, instead of standing by for ever', async () => {
  const { state, kube } = await leaseServer();
  state.forbidden = true;
  elector = elect(kube, 'a', { retryPeriodMs: 50, refusedForGoodMs: 300 });
  await expect(elector.acquire(() => {})).rejects.toThrow(
    /refuses the Lease ns\/op .*the leader-election Role must allow get, create, update and watch on leases/,
  );
});
