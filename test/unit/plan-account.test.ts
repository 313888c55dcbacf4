// Which account a reconcile works with, and what an exception out of a reconcile means, as
// tables (plan-account.ts planAccount, failure.ts ofThrown).
import { describe, expect, it } from 'vitest';
import { ConditionError, ofThrown, stalled } from '../../src/operator/runtime/engine/failure.ts';
import {
  ACCOUNT_RECHECK_MS,
  accountUnusable,
  planAccount,
} from '../../src/operator/runtime/engine/plan-account.ts';
import { KubeError } from '../../src/operator/runtime/kube/kube.ts';

const waiting = {
  ok: false as const,
  state: 'progressing' as const,
  reason: 'WaitingForAccount',
  message: 'not Ready',
};
const refused = { ok: false as const, state: 'stalled' as const, reason: 'AccountNotAllowed', message: 'no' };
const A = { ok: true as const, id: 'EdgeAccount/team/a' };

describe('planAccount: the holder for a delete, else the resolution', () => {
  const rows: [string, Parameters<typeof planAccount>[0], Record<string, unknown>][] = [
    [
      'a delete: the account holding the resource',
      { deleting: true, held: 'EdgeAccount/team/old', resolved: A },
      { id: 'EdgeAccount/team/old' },
    ],
    ['a delete, nothing held: the resolution', { deleting: true, resolved: A }, { id: 'EdgeAccount/team/a' }],
    [
      'not deleting: the resolution, whatever is held',
      { deleting: false, held: 'EdgeAccount/team/old', resolved: A },
      { id: 'EdgeAccount/team/a' },
    ],
    [
      'an account on its way: waits, looked at again in a minute',
      { deleting: false, resolved: waiting },
      {
        phase: { state: 'progressing', reason: 'WaitingForAccount' },
        outcome: { requeueAfterMs: ACCOUNT_RECHECK_MS },
      },
    ],
    [
      'an account refused: stalls',
      { deleting: false, resolved: refused },
      { phase: { state: 'stalled', reason: 'AccountNotAllowed' }, outcome: {} },
    ],
    [
      'a delete with nothing held, no account: the same condition',
      { deleting: true, resolved: refused },
      { phase: { reason: 'AccountNotAllowed' } },
    ],
  ];
  it.each(rows)('%s', (_what, input, expected) => {
    expect(planAccount(input)).toMatchObject(expected);
  });
  it('an account that cannot serve now: its phase, looked at again in a minute', () => {
    const phase = { state: 'progressing' as const, reason: 'AccountNotReady', message: 'key refused' };
    expect(accountUnusable(phase)).toMatchObject({ phase, outcome: { requeueAfterMs: ACCOUNT_RECHECK_MS } });
  });
});

describe('ofThrown: an exception out of a reconcile', () => {
  const f = stalled('APIRejected', 'bad');
  const rows: [string, unknown, unknown][] = [
    ['an API call’s failure: the failure', new ConditionError(f), { failure: f }],
    [
      'a Kubernetes write met a newer version (409): again, with backoff',
      new KubeError(409, 'conflict'),
      { outcome: { retry: true } },
    ],
    ['another Kubernetes error: thrown on', new KubeError(500, 'boom'), undefined],
    ['anything else: thrown on', new Error('bug'), undefined],
  ];
  it.each(rows)('%s', (_what, err, expected) => {
    expect(ofThrown(err)).toEqual(expected);
  });
});
