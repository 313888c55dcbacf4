// The account reconciler's plan (accounts/plan.ts): what a run does with its facts, by table;
// the finalizer helper (finalizer.ts) and the controller loop (controller-loop.ts) both
// reconcilers run.
import { describe, expect, it } from 'vitest';
import {
  type AccountConnection,
  type AccountFacts,
  keyAccepted,
  openAccount,
  planAccount,
  UNSETTLED_RECHECK_MS,
} from '../../src/operator/runtime/accounts/plan.ts';
import { ACCOUNT_RESYNC_MS, failed, stalled } from '../../src/operator/runtime/accounts/probe.ts';
import type { Phase } from '../../src/operator/runtime/bindings/conditions.ts';
import { FINALIZER } from '../../src/operator/runtime/constants.ts';
import { finalizer, finalizerEvent } from '../../src/operator/runtime/kube/finalizer.ts';
import type { Kube, KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import {
  applyOutcome,
  type LoopOutcome,
  runLoop,
} from '../../src/operator/runtime/scheduler/controller-loop.ts';

const users = (holding: number, names = holding ? ['Kind ns/a'] : []) => ({ names, holding });
const facts = (o: Partial<AccountFacts> & Pick<AccountFacts, 'event'>): AccountFacts => ({
  users: users(0),
  caughtUp: true,
  ...o,
});
const unusable = { usable: false, verified: false };
const usable = { usable: true, verified: true };
const held: Phase = { state: 'ready', reason: 'KeyAccepted', message: 'held' };
const refused = stalled('KeyRefused', 'refused', 300_000);
const unavailable = failed({ state: 'progressing', reason: 'APIUnavailable', message: 'down' });

describe('openAccount: before the connection is known', () => {
  it.each([
    ['gone: its client goes, its key is let go', facts({ event: 'gone' }), 'forget', 'gone', false],
    [
      'live: holds its key for its objects, connects',
      facts({ event: 'apply', users: users(2) }),
      '',
      2,
      true,
    ],
    [
      'deleted, in use, client unproved: connects to prove it',
      facts({ event: 'cleanup', users: users(1), entry: unusable }),
      '',
      1,
      true,
    ],
    [
      'deleted, in use, client proved: no connection',
      facts({ event: 'cleanup', users: users(1), entry: usable }),
      '',
      1,
      false,
    ],
    [
      'deleted, none seen, caches not listed: connects (its objects may yet show up)',
      facts({ event: 'cleanup', caughtUp: false }),
      '',
      0,
      true,
    ],
    ['deleted, unused: removed, no connection', facts({ event: 'cleanup' }), '', 0, false],
  ] as const)('%s', (_, f, forget, holdKey, connect) => {
    expect(openAccount(f)).toEqual({ forget: forget === 'forget', holdKey, connect });
  });
});

describe('planAccount: once the connection is known (a value, never thrown)', () => {
  const url = 'https://api.example.test';
  const entry = { phase: held, url };
  const table: [string, AccountFacts, AccountConnection, ReturnType<typeof planAccount>][] = [
    ['gone: nothing more', facts({ event: 'gone' }), {}, { wake: false, release: false }],
    [
      'live, key accepted, was not usable: usable, Ready, its objects wake',
      facts({ event: 'apply', entry: unusable }),
      { connected: { ok: true, url }, entry },
      {
        mark: { usable: true, phase: keyAccepted(url) },
        status: { phase: keyAccepted(url), url },
        wake: true,
        release: false,
        againMs: ACCOUNT_RESYNC_MS,
      },
    ],
    [
      'live, key accepted, was usable: no wake',
      facts({ event: 'apply', entry: usable }),
      { connected: { ok: true, url }, entry },
      {
        mark: { usable: true, phase: keyAccepted(url) },
        status: { phase: keyAccepted(url), url },
        wake: false,
        release: false,
        againMs: ACCOUNT_RESYNC_MS,
      },
    ],
    [
      'live, accepted, but its entry went meanwhile: no wake',
      facts({ event: 'apply' }),
      { connected: { ok: true, url } },
      {
        mark: { usable: true, phase: keyAccepted(url) },
        status: { phase: keyAccepted(url), url },
        wake: false,
        release: false,
        againMs: ACCOUNT_RESYNC_MS,
      },
    ],
    [
      'live, refused: not usable, says why without a URL, looks again when the failure says',
      facts({ event: 'apply', entry: usable }),
      { connected: refused, entry },
      {
        mark: { usable: false, phase: refused.phase },
        status: { phase: refused.phase },
        wake: false,
        release: false,
        againMs: 300_000,
      },
    ],
    [
      'live, API unavailable without a Retry-After: looks again at the resync',
      facts({ event: 'apply' }),
      { connected: unavailable },
      {
        mark: { usable: false, phase: unavailable.phase },
        status: { phase: unavailable.phase },
        wake: false,
        release: false,
        againMs: ACCOUNT_RESYNC_MS,
      },
    ],
    [
      'deleted, in use, client proved now: usable with the phase it has, its objects wake, InUse',
      facts({ event: 'cleanup', users: users(1), entry: unusable }),
      { connected: { ok: true, url }, entry },
      {
        mark: { usable: true, phase: held },
        wake: true,
        release: false,
        status: {
          phase: expect.objectContaining({ state: 'progressing', reason: 'InUse' }) as never,
          url,
        },
        againMs: ACCOUNT_RESYNC_MS,
      },
    ],
    [
      'deleted, in use, not proved: InUse with the URL it has, no wake',
      facts({ event: 'cleanup', users: users(1), entry: unusable }),
      { connected: refused, entry },
      {
        wake: false,
        release: false,
        status: { phase: expect.objectContaining({ reason: 'InUse' }) as never, url },
        againMs: ACCOUNT_RESYNC_MS,
      },
    ],
    [
      'deleted, none seen before every cache listed: no status, looks again soon',
      facts({ event: 'cleanup', caughtUp: false, entry: usable }),
      {},
      { wake: false, release: false, againMs: UNSETTLED_RECHECK_MS },
    ],
    [
      'deleted, unused, every cache listed: removed, never looked at again',
      facts({ event: 'cleanup', entry: usable }),
      {},
      { wake: false, release: true },
    ],
  ];
  it.each(table)('%s', (_, f, c, plan) => {
    expect(planAccount(f, c)).toEqual(plan);
  });
});

/** An object behind a patch that checks the resourceVersion, as the API server does. */
function served(metadata: Partial<KubeObject['metadata']>) {
  const patches: string[][] = [];
  let rv = 1;
  const obj: KubeObject = { metadata: { name: 'a', resourceVersion: '1', ...metadata } } as KubeObject;
  const kube = {
    patch: async (_r: unknown, _ns: unknown, _n: unknown, body: { metadata: KubeObject['metadata'] }) => {
      if (body.metadata.resourceVersion !== String(rv)) throw new Error('409');
      patches.push(body.metadata.finalizers ?? []);
      rv++;
      return {
        metadata: { ...obj.metadata, finalizers: body.metadata.finalizers, resourceVersion: String(rv) },
      };
    },
  } as unknown as Kube;
  return { obj, patches, t: { kube, resource: { group: 'g', version: 'v1', plural: 'p' } } };
}

describe('finalizer: Apply after the finalizer is on, Cleanup before it comes off', () => {
  const deleted = { deletionTimestamp: '2024-01-01T00:00:00Z' };
  it.each([
    { meta: {}, event: 'add' },
    { meta: { finalizers: [FINALIZER] }, event: 'apply' },
    { meta: { ...deleted, finalizers: ['x', FINALIZER] }, event: 'cleanup' },
    { meta: deleted, event: 'none' },
  ])('$meta: $event', ({ meta, event }) => {
    expect(finalizerEvent({ metadata: { name: 'a', ...meta } } as KubeObject)).toBe(event);
  });

  it('adds it before Apply runs, and only when missing', async () => {
    const { obj, patches, t } = served({ finalizers: ['x'] });
    const seen: string[][] = [];
    const out = await finalizer(t, obj, async (e) => {
      seen.push([e, ...(obj.metadata.finalizers ?? [])]);
      return { value: 1 };
    });
    expect(out).toEqual({ event: 'apply', value: 1, removed: false });
    expect(seen).toEqual([['apply', 'x', FINALIZER]]);
    await finalizer(t, obj, async () => ({ value: 2 }));
    expect(patches).toEqual([['x', FINALIZER]]);
  });

  it('removes it once Cleanup is done, not before', async () => {
    const { obj, patches, t } = served({ deletionTimestamp: 'now', finalizers: ['x', FINALIZER] });
    expect(await finalizer(t, obj, async () => ({ value: 5, done: false }))).toEqual({
      event: 'cleanup',
      value: 5,
      removed: false,
    });
    expect(patches).toEqual([]);
    expect((await finalizer(t, obj, async () => ({ value: undefined, done: true }))).removed).toBe(true);
    expect(patches).toEqual([['x']]);
    // gone from it: nothing runs
    let ran = false;
    const none = await finalizer(t, obj, async () => {
      ran = true;
      return { value: 0 };
    });
    expect([none, ran]).toEqual([{ event: 'none', removed: false }, false]);
  });
});

/** A queue that records what a run's outcome asked of it. */
function recorder(keys: string[] = []) {
  const calls: string[] = [];
  const queue = {
    addRateLimited: (k: string) => calls.push(`backoff ${k}`),
    forget: (k: string) => calls.push(`forget ${k}`),
    addAfter: (k: string, ms: number) => calls.push(`after ${k} ${ms}`),
    keepDelay: (k: string) => calls.push(`keep ${k}`),
    done: (k: string) => calls.push(`done ${k}`),
  };
  return { queue, calls, next: async () => keys.shift() };
}

describe('the controller loop: an outcome, applied to the queue', () => {
  it.each<[LoopOutcome, string[], string]>([
    [{}, ['forget k'], 'success'],
    [{ retry: true }, ['backoff k'], 'requeue'],
    [{ requeueAfterMs: 15_000 }, ['forget k', 'after k 15000'], 'requeue_after'],
    [{ requeueAfterMs: 0 }, ['forget k', 'after k 0'], 'success'],
    [{ unchanged: true }, ['forget k', 'keep k'], 'success'],
    [{ unchanged: true, requeueAfterMs: 5 }, ['forget k', 'after k 5'], 'requeue_after'],
  ])('%j', (out, calls, result) => {
    const r = recorder();
    expect(applyOutcome(r.queue, 'k', out)).toBe(result);
    expect(r.calls).toEqual(calls);
  });

  it('runs each key until the queue gives none; a throw is said, backed off, and the key handed back', async () => {
    const r = recorder(['a', 'b']);
    const said: string[] = [];
    await runLoop(
      r.queue,
      r.next,
      async (k) => {
        if (k === 'b') throw new Error('boom');
        return { requeueAfterMs: 10 };
      },
      {
        ended: (k, res) => said.push(`${k} ${res}`),
        failed: (k, e) => said.push(`${k} ${(e as Error).message}`),
      },
    );
    expect(r.calls).toEqual(['forget a', 'after a 10', 'done a', 'backoff b', 'done b']);
    expect(said).toEqual(['a requeue_after', 'b boom']);
  });
});
