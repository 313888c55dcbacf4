// Whether an account can serve: one cheap request proves its key, and what stops it (a stall,
// or a retry) is an AccountFailure value the reconciler's plan turns into the account's status.
import { ApiError, isRetryable } from '../../../api/errors.ts';
import type { Phase } from '../bindings/conditions.ts';
import { withPriority } from '../scheduler/budget.ts';
import type { AccountRegistry } from './registry.ts';

/** An account looks at its Secret (rotation) and its counts this often. */
export const ACCOUNT_RESYNC_MS = 15_000;
/** A refused key is tried again this often without a rotation (the API side may change). */
export const REFUSED_RETRY_MS = 5 * 60_000;

/** Why an account cannot serve (a stall, or a retry after `retryMs`): a value, never thrown. */
export interface AccountFailure {
  ok: false;
  phase: Phase;
  retryMs?: number;
}
/** An account's connection: the URL its client serves, or why it cannot serve. */
export type Connected = { ok: true; url: string } | AccountFailure;

export const failed = (phase: Phase, retryMs?: number): AccountFailure => ({ ok: false, phase, retryMs });
export const stalled = (reason: string, message: string, retryMs?: number): AccountFailure =>
  failed({ state: 'stalled', reason, message }, retryMs);

/** When each account's key was last refused. */
export class KeyProbe {
  readonly refusedAt = new Map<string, number>();
  private readonly registry: AccountRegistry;
  constructor(registry: AccountRegistry) {
    this.registry = registry;
  }

  /**
   * The cheapest read of the API (a list of one): does it take the key? Undefined when it
   * does; an error that is not the API's answer is thrown (retried as any failed run is).
   */
  async probe(id: string, where: string): Promise<AccountFailure | undefined> {
    const client = this.registry.get(id)!.client;
    try {
      await withPriority('high', async () => {
        for await (const _ of client.ipPolicies.list({ limit: 1 })) break;
      });
      this.refusedAt.delete(id);
      return undefined;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (err.status === 401 || err.status === 403) {
        this.refusedAt.set(id, Date.now());
        // the API's message may quote part of the key: only the status is said
        return stalled(
          'KeyRefused',
          `the API refused the key in ${where} (HTTP ${err.status})`,
          REFUSED_RETRY_MS,
        );
      }
      if (isRetryable(err))
        return failed(
          { state: 'progressing', reason: 'APIUnavailable', message: `checking the key: ${err.message}` },
          err.retryAfterMs ?? ACCOUNT_RESYNC_MS,
        );
      return stalled('APIRejected', `checking the key: HTTP ${err.status}`);
    }
  }
}
