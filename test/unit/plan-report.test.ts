// How a reconcile that cannot finish is reported, as tables: an API error -> its condition
// (failure.ts apiFailure), and a failure with what the object shows and the memo remembers ->
// kept, quiet, or written with or without an Event (plan-report.ts planFailureReport).
import { describe, expect, it } from 'vitest';
import {
  apiFailure,
  type Failure,
  failure,
  QUIET_WAIT_FOR_PROGRESS_MS,
  RETRY_AFTER_MAX_MS,
  SLOW_RETRY_MS,
  stalled,
} from '../../src/operator/runtime/engine/failure.ts';
import { planFailureReport } from '../../src/operator/runtime/engine/plan-report.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';

describe('apiFailure: a rejected request stalls, anything else retries', () => {
  const rows: [string, Parameters<typeof apiFailure>[1], Record<string, unknown>][] = [
    [
      '429: throttled, with the queue’s backoff',
      { status: 429, retryable: true },
      {
        phase: { state: 'progressing', reason: 'APIThrottled', message: 'get x: no' },
        outcome: { retry: true },
      },
    ],
    [
      '503 with a Retry-After: as the API asks',
      { status: 503, retryable: true, retryAfterMs: 7_000 },
      { phase: { reason: 'APIUnavailable' }, outcome: { requeueAfterMs: 7_000 } },
    ],
    [
      'a Retry-After of days: an hour at most',
      { status: 503, retryable: true, retryAfterMs: 3 * 86_400_000 },
      { outcome: { requeueAfterMs: RETRY_AFTER_MAX_MS } },
    ],
    [
      'a connection never made (no status): unavailable',
      { retryable: true },
      { phase: { reason: 'APIUnavailable' }, outcome: { retry: true } },
    ],
    [
      '401: unauthorized, looked at again slowly',
      { status: 401, retryable: false },
      { phase: { state: 'stalled', reason: 'APIUnauthorized' }, outcome: { requeueAfterMs: SLOW_RETRY_MS } },
    ],
    ['403: unauthorized', { status: 403, retryable: false }, { phase: { reason: 'APIUnauthorized' } }],
    [
      '400: rejected, tried again when the spec changes',
      { status: 400, retryable: false },
      { phase: { state: 'stalled', reason: 'APIRejected', message: 'get x: no' }, outcome: {} },
    ],
  ];
  it.each(rows)('%s', (_what, err, expected) => {
    expect(apiFailure('get x', err, 'no')).toMatchObject(expected);
  });
});

const T = 1_000_000;
const ready = { type: 'Ready', status: 'True' };
const obj = (status?: Record<string, unknown>, generation = 2): KubeObject => ({
  metadata: { name: 'a', namespace: 'team', generation },
  ...(status ? { status } : {}),
});
const readyAt = (gen: number) => ({ observedGeneration: gen, conditions: [ready] });
const throttled = failure(
  { state: 'progressing', reason: 'APIThrottled', message: 'slow down' },
  { retry: true },
);
const unavailable = failure(
  { state: 'progressing', reason: 'APIUnavailable', message: 'down' },
  { retry: true },
);
const waitRef = failure(
  { state: 'progressing', reason: 'WaitingForReference', message: 'waiting' },
  {},
  QUIET_WAIT_FOR_PROGRESS_MS,
);
const waitRefQuietWhenReady = failure(
  { state: 'progressing', reason: 'WaitingForReference', message: 'waiting' },
  { requeueAfterMs: 2_000 },
  QUIET_WAIT_FOR_PROGRESS_MS,
  true,
);
const waitSecret = failure({ state: 'progressing', reason: 'WaitingForSecret', message: 'no secret' });
const stall = stalled('ImmutableFieldDiffers', 'region differs');
const conflict = stalled('Conflict', 'taken', { requeueAfterMs: 15_000 });

describe('planFailureReport: kept, quiet, or written (with an Event, once)', () => {
  const rows: [
    string,
    { obj: KubeObject; err: Failure; waitingSince?: number; unavailableNoted?: boolean; requested?: string },
    Record<string, unknown>,
  ][] = [
    [
      'throttled while Ready at this generation: kept',
      { obj: obj(readyAt(2)), err: throttled },
      { action: 'keep', outcome: { retry: true } },
    ],
    [
      'throttled with a new generation pending: written, no Event (throttling shows in metrics)',
      { obj: obj(readyAt(1)), err: throttled },
      { action: 'write', event: undefined, remember: false },
    ],
    [
      'a new object waiting for a reference on its way: quiet, the wait begins now',
      { obj: obj(), err: waitRef },
      { action: 'quiet', outcome: { requeueAfterMs: QUIET_WAIT_FOR_PROGRESS_MS }, waitingSince: T },
    ],
    [
      'the quiet wait goes on: what is left of it',
      { obj: obj(), err: waitSecret, waitingSince: T - 3_000 },
      { action: 'quiet', outcome: { requeueAfterMs: 2_000 }, waitingSince: T - 3_000 },
    ],
    [
      'the quiet wait is over: written, with a Warning for a Secret',
      { obj: obj(), err: waitSecret, waitingSince: T - 5_000 },
      {
        action: 'write',
        waitingSince: undefined,
        event: { type: 'Warning', reason: 'WaitingForSecret', message: 'no secret' },
      },
    ],
    [
      'a Ready object’s wait that follows every start: quiet, its requeue sooner',
      { obj: obj(readyAt(2)), err: waitRefQuietWhenReady },
      { action: 'quiet', outcome: { requeueAfterMs: 2_000 } },
    ],
    [
      'a Ready object’s ordinary wait for a reference: written, a Normal Event',
      { obj: obj(readyAt(2)), err: waitRef },
      { action: 'write', event: { type: 'Normal', reason: 'WaitingForReference' } },
    ],
    [
      'a stall: written, remembered, a Warning; a requested reconcile is handled',
      { obj: obj(readyAt(2)), err: stall, requested: 'now' },
      {
        action: 'write',
        fields: { lastHandledReconcileAt: 'now' },
        remember: true,
        event: { type: 'Warning', reason: 'ImmutableFieldDiffers', message: 'region differs' },
      },
    ],
    [
      'a conflict: not remembered (the other object may go), looked at again soon',
      { obj: obj(readyAt(2)), err: conflict },
      {
        action: 'write',
        remember: false,
        outcome: { requeueAfterMs: 15_000 },
        event: { reason: 'Conflict' },
      },
    ],
    [
      'the API unavailable, first time: an Event, and the memo notes it',
      { obj: obj(readyAt(2)), err: unavailable },
      { action: 'write', unavailableNoted: true, event: { type: 'Warning', reason: 'APIUnavailable' } },
    ],
    [
      'the API unavailable again: no second Event',
      { obj: obj(readyAt(2)), err: unavailable, unavailableNoted: true },
      { action: 'write', unavailableNoted: true, event: undefined },
    ],
    [
      'past the unavailable API (another failure): the note is dropped',
      { obj: obj(readyAt(2)), err: stall, unavailableNoted: true },
      { action: 'write', unavailableNoted: undefined, event: { reason: 'ImmutableFieldDiffers' } },
    ],
  ];
  it.each(rows)('%s', (_what, input, expected) => {
    const { event, ...rest } = expected;
    const r = planFailureReport({ ...input, now: T });
    expect(r).toMatchObject(rest);
    if ('event' in expected && event === undefined) expect(r).not.toHaveProperty('event');
    else if (event) expect(r).toMatchObject({ event });
  });
  it('written without a request: no status field but the condition', () => {
    expect(planFailureReport({ obj: obj(), err: stall, now: T })).toMatchObject({ fields: {} });
  });
});
