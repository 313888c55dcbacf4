// API calls counted without a proxy: by operation and status, for the whole emulator and for
// each account apart (what one account's client cost, with another busy beside it).

/** emulator_requests_total{operation, status}. */
export class RequestCounters {
  private readonly counts = new Map<string, number>();
  private readonly accounts = new Map<string, RequestCounters>();
  inc(operation: string, status: number, account?: string): void {
    const k = `${operation}\t${status}`;
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
    if (account !== undefined) this.of(account).inc(operation, status);
  }
  /** The calls of one account's keys (a view that fills as they come). */
  of(account: string): RequestCounters {
    let c = this.accounts.get(account);
    if (!c) {
      c = new RequestCounters();
      this.accounts.set(account, c);
    }
    return c;
  }
  /** Calls of an operation (any status), or of every operation. */
  total(operation?: string): number {
    let n = 0;
    for (const [k, v] of this.counts) if (!operation || k.startsWith(`${operation}\t`)) n += v;
    return n;
  }
  /** Calls by "operation status", e.g. {"ipPolicies.list 200": 3}. */
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counts].map(([k, v]) => [k.replace('\t', ' '), v]));
  }
  byStatus(status: number): number {
    let n = 0;
    for (const [k, v] of this.counts) if (k.endsWith(`\t${status}`)) n += v;
    return n;
  }
  reset(): void {
    this.counts.clear();
    for (const c of this.accounts.values()) c.reset();
  }
  /**
   * The Prometheus text; with `perAccount`, also emulator_account_requests_total{account,...}
   * (only an emulator with several accounts has it: one account's figures are the totals).
   */
  prometheus(perAccount = false): string {
    const lines = [
      "# HELP emulator_requests_total API requests answered, by operation (the operations table's name) and HTTP status",
      '# TYPE emulator_requests_total counter',
    ];
    for (const [k, v] of [...this.counts].sort()) {
      const [operation, status] = k.split('\t');
      lines.push(`emulator_requests_total{operation="${operation}",status="${status}"} ${v}`);
    }
    if (perAccount) {
      lines.push(
        '# HELP emulator_account_requests_total API requests answered, by the account of the key, operation and HTTP status',
        '# TYPE emulator_account_requests_total counter',
      );
      for (const [account, c] of [...this.accounts].sort(([a], [b]) => (a < b ? -1 : 1)))
        for (const [k, v] of [...c.counts].sort()) {
          const [operation, status] = k.split('\t');
          lines.push(
            `emulator_account_requests_total{account="${account}",operation="${operation}",status="${status}"} ${v}`,
          );
        }
    }
    return `${lines.join('\n')}\n`;
  }
}
