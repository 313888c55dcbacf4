// The Edge API's call and budget metrics by account. The `account` label is the account's
// identity (accountLabel): a series starts with its account's first request and goes when the
// account goes, so the label's values are bounded by the account objects that exist. A call
// finishing on the client of an account already gone counts nowhere (it would bring the
// series back for good).

import type { CallEvent } from '../../../api/transport.ts';
import type { Metrics } from '../metrics.ts';
import { type Budget, PRIORITIES } from '../scheduler/budget.ts';
import type { Priority } from '../scheduler/priority.ts';
import { accountLabel } from './resolve.ts';

export class AccountMetrics {
  private readonly m: Metrics;
  private readonly exists: (account: string) => boolean;

  constructor(metrics: Metrics, exists: (account: string) => boolean) {
    this.m = metrics;
    this.exists = exists;
  }

  /** An account's client made: its 429 series from the start (dashboards find the operator's job by it). */
  added(account: string): void {
    if (this.exists(account)) this.m.apiThrottled.inc({ account: accountLabel(account) }, 0);
  }

  /** A call's outcome (status 0: no answer). */
  call(account: string, e: CallEvent): void {
    if (!this.exists(account)) return;
    const label = accountLabel(account);
    this.m.apiRequests.inc({ operation: e.operation, status: String(e.status), account: label });
    this.m.apiDuration.observe({ operation: e.operation }, e.durationMs / 1000);
    if (e.status === 429) this.m.apiThrottled.inc({ account: label });
  }

  /** A call retried by the transport. */
  retried(account: string, reason: string): void {
    if (this.exists(account)) this.m.apiRetries.inc({ reason, account: accountLabel(account) });
  }

  /** The account budget's onServed: how long each call waited for its turn at the budget. */
  served(account: string): (priority: Priority, waitedMs: number) => void {
    return (priority, waitedMs) => {
      if (this.exists(account))
        this.m.budgetWaitDuration.observe({ priority, account: accountLabel(account) }, waitedMs / 1000);
    };
  }

  /** The budget gauges, read from the budget of every account there is now (before a scrape). */
  scrape(accounts: Iterable<{ id: string; budget: Budget }>): void {
    const { apiLimiterWait, budgetWait, budgetQueued, budgetFlows } = this.m;
    for (const g of [apiLimiterWait, budgetWait, budgetQueued, budgetFlows]) g.reset();
    for (const { id, budget } of accounts) {
      const account = accountLabel(id);
      apiLimiterWait.set({ account }, budget.waitedMs / 1000);
      for (const priority of PRIORITIES) {
        budgetWait.set({ priority, account }, budget.waitedByPriority[priority] / 1000);
        budgetQueued.set({ priority, account }, budget.queued[priority]);
      }
      budgetFlows.set({ account }, budget.flowsWaiting);
    }
  }

  /** The account went: every series of its label goes too. */
  async forget(account: string): Promise<void> {
    const label = accountLabel(account);
    const { apiRequests, apiThrottled, apiRetries, budgetWaitDuration } = this.m;
    const { apiLimiterWait, budgetWait, budgetQueued, budgetFlows } = this.m;
    for (const metric of [
      apiRequests,
      apiThrottled,
      apiRetries,
      budgetWaitDuration,
      apiLimiterWait,
      budgetWait,
      budgetQueued,
      budgetFlows,
    ] as {
      get(): Promise<{ values: { labels: Record<string, string | number> }[] }>;
      remove(l: object): void;
    }[]) {
      const seen = new Set<string>();
      for (const { labels } of (await metric.get()).values) {
        if (labels.account !== label) continue;
        // a histogram's buckets are one series with its `le` values
        const { le: _le, ...series } = labels;
        const key = JSON.stringify(series);
        if (seen.has(key)) continue;
        seen.add(key);
        metric.remove(series);
      }
    }
  }
}
