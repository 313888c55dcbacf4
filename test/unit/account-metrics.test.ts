// The API metrics by account, read from the real prom-client registry as Prometheus scrapes it:
// each account's own series, bounded by the accounts that exist, gone with the account.
import { describe, expect, it } from 'vitest';
import type { EdgeClient } from '../../src/api/client.ts';
import type { CallEvent } from '../../src/api/transport.ts';
import { AccountMetrics } from '../../src/operator/runtime/accounts/account-metrics.ts';
import { AccountRegistry } from '../../src/operator/runtime/accounts/registry.ts';
import { INSTALLATION } from '../../src/operator/runtime/accounts/resolve.ts';
import { createMetrics } from '../../src/operator/runtime/metrics.ts';
import { Budget, withPriority } from '../../src/operator/runtime/scheduler/budget.ts';

const call = (operation: string, status: number): CallEvent => ({
  operation,
  method: 'GET',
  status,
  durationMs: 12,
  attempt: 1,
});
const TEAM = 'EdgeAccount/team-a/default';
const OTHER = 'EdgeAccount/team-b/default';
const SHARED = 'ClusterEdgeAccount/shared';

/** The scrape's lines that carry this account label. */
async function linesOf(metrics: ReturnType<typeof createMetrics>, account: string): Promise<string[]> {
  return (await metrics.registry.metrics()).split('\n').filter((l) => l.includes(`account="${account}"`));
}

describe('API metrics by account', () => {
  it('each account counts its own calls, 429s, retries and budget waits, named by kind, namespace and name', async () => {
    const metrics = createMetrics();
    const live = new Set([INSTALLATION, TEAM, OTHER, SHARED]);
    const m = new AccountMetrics(metrics, (id) => live.has(id));
    m.call(TEAM, call('ipPolicies.create', 201));
    m.call(TEAM, call('ipPolicies.create', 429));
    m.call(OTHER, call('ipPolicies.create', 201));
    m.call(INSTALLATION, call('tunnels.list', 0));
    m.retried(SHARED, 'ECONNRESET');
    m.served(TEAM)('high', 1500);
    const text = await metrics.registry.metrics();
    // two teams' accounts are both called `default`: the label tells them apart
    expect(text).toContain(
      'edge_api_requests_total{operation="ipPolicies.create",status="201",account="EdgeAccount/team-a/default"} 1',
    );
    expect(text).toContain(
      'edge_api_requests_total{operation="ipPolicies.create",status="201",account="EdgeAccount/team-b/default"} 1',
    );
    expect(text).toContain('edge_api_throttled_total{account="EdgeAccount/team-a/default"} 1');
    expect(text).not.toContain('edge_api_throttled_total{account="EdgeAccount/team-b/default"}');
    expect(text).toContain(
      'edge_api_requests_total{operation="tunnels.list",status="0",account="installation"} 1',
    );
    expect(text).toContain(
      'edge_api_retries_total{reason="ECONNRESET",account="ClusterEdgeAccount/shared"} 1',
    );
    expect(text).toContain(
      'edge_api_budget_wait_duration_seconds_bucket{le="2.5",priority="high",account="EdgeAccount/team-a/default"} 1',
    );
  });

  it('the budget gauges are read from each account’s own budget', async () => {
    const metrics = createMetrics();
    const m = new AccountMetrics(metrics, () => true);
    // a budget spent, whose next token never comes in this test: callers stay waiting
    const busy = new Budget({ perMinute: 4, burst: 1, sleep: () => new Promise(() => {}) });
    const idle = new Budget({ perMinute: 120 });
    await busy.take('high');
    for (const priority of ['high', 'low'] as const)
      void withPriority({ priority, flow: 'team-a' }, () => busy.take());
    m.scrape([
      { id: TEAM, budget: busy },
      { id: OTHER, budget: idle },
    ]);
    const text = await metrics.registry.metrics();
    expect(text).toContain('edge_api_budget_waiting{priority="high",account="EdgeAccount/team-a/default"} 1');
    expect(text).toContain('edge_api_budget_waiting{priority="low",account="EdgeAccount/team-a/default"} 1');
    expect(text).toContain('edge_api_budget_waiting{priority="high",account="EdgeAccount/team-b/default"} 0');
    expect(text).toContain('edge_api_budget_namespaces_waiting{account="EdgeAccount/team-a/default"} 1');
    // an account no longer there is not scraped any more
    m.scrape([{ id: OTHER, budget: idle }]);
    expect(await linesOf(metrics, TEAM)).toEqual([]);
  });

  it('an account that went takes its series with it; a call finishing on its client afterwards counts nowhere', async () => {
    const metrics = createMetrics();
    const live = new Set([TEAM, OTHER]);
    const m = new AccountMetrics(metrics, (id) => live.has(id));
    m.call(TEAM, call('ipPolicies.create', 201));
    m.call(TEAM, call('ipPolicies.list', 429));
    m.retried(TEAM, 'ECONNRESET');
    m.served(TEAM)('low', 20);
    m.call(OTHER, call('ipPolicies.create', 201));
    expect((await linesOf(metrics, TEAM)).length).toBeGreaterThan(4);
    live.delete(TEAM);
    await m.forget(TEAM);
    m.call(TEAM, call('ipPolicies.delete', 204));
    m.served(TEAM)('urgent', 5);
    expect(await linesOf(metrics, TEAM)).toEqual([]);
    // the other account keeps its series
    expect(await linesOf(metrics, OTHER)).toEqual([
      'edge_api_requests_total{operation="ipPolicies.create",status="201",account="EdgeAccount/team-b/default"} 1',
    ]);
  });

  it('wired to the registry as the operator wires it: an account’s series start when it is held and go when it goes', async () => {
    const metrics = createMetrics();
    let m: AccountMetrics | undefined;
    const registry = new AccountRegistry({
      client: (a) =>
        ({
          transport: { budget: a.budget },
          close: async () => {},
          call: (status: number) => {
            const e = call('ipPolicies.create', status);
            m!.call(a.account, e);
            a.onCall(e);
          },
        }) as unknown as EdgeClient,
      added: (account) => m!.added(account),
      removed: (account) => void m!.forget(account),
    });
    m = new AccountMetrics(metrics, (id) => !!registry.get(id));
    registry.set(TEAM, { url: 'https://api', key: 'k', perMinute: 120 });
    registry.set(OTHER, { url: 'https://api', key: 'k2', perMinute: 120 });
    // before any request: a 429 series at 0, as dashboards and alerts expect
    expect(await linesOf(metrics, TEAM)).toEqual([
      'edge_api_throttled_total{account="EdgeAccount/team-a/default"} 0',
    ]);
    (registry.get(TEAM)!.client as unknown as { call(s: number): void }).call(429);
    m.scrape(registry.all());
    expect(await linesOf(metrics, TEAM)).toContain(
      'edge_api_throttled_total{account="EdgeAccount/team-a/default"} 1',
    );
    await registry.remove(TEAM);
    await new Promise((r) => setTimeout(r, 0));
    m.scrape(registry.all());
    expect(await linesOf(metrics, TEAM)).toEqual([]);
    expect(await linesOf(metrics, OTHER)).toContain(
      'edge_api_throttled_total{account="EdgeAccount/team-b/default"} 0',
    );
  });
});
