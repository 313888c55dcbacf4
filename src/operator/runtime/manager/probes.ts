// /healthz, /readyz and /metrics. Bound before the operator touches a cluster or an
// account, so a busy port is one line and exit 2 rather than a stack trace after CRDs
// and examples were applied.
import { createServer, type Server } from 'node:http';
import type { Metrics } from '../metrics.ts';
import { ConfigError } from './config-error.ts';
import { parseListen } from './listen-address.ts';

export interface Check {
  ok: boolean;
  /** Why not, for the probe's body and `kubectl describe pod`. */
  reason?: string;
}

/**
 * Unhealthy when an informer made no progress (no list, no watch opened, no event) for twice
 * its idle watchdog: its watch is dead and reconnecting has not helped, so the kubelet should
 * restart the pod rather than let it serve a frozen cache.
 */
export function watchHealth(
  informers: { stalledMs(now: number): number; idleMs: number }[],
  now: number,
): Check {
  const stuck = informers.find((i) => i.stalledMs(now) > 2 * i.idleMs);
  return stuck
    ? { ok: false, reason: `a watch made no progress for ${Math.round(stuck.stalledMs(now) / 1000)}s` }
    : { ok: true };
}

export class ProbeServer {
  private readonly servers: Server[] = [];
  private readonly metrics: Metrics;
  /** Liveness: false makes the kubelet restart the pod (e.g. watches dead past the watchdog). */
  health: () => Check = () => ({ ok: true });
  /** Readiness: false until the caches synced (a standby is ready: it serves probes and waits). */
  readiness: () => Check = () => ({ ok: false, reason: 'starting' });
  /** Runs before each scrape, for gauges that are read rather than pushed. */
  beforeScrape: () => void = () => {};

  constructor(metrics: Metrics) {
    this.metrics = metrics;
  }

  /** Binds one address; `withMetrics` false serves only the probes (a separate probe address). */
  listen(flag: string, address: string, withMetrics: boolean): Promise<void> {
    const { host, port } = parseListen(flag, address);
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/healthz' || path === '/readyz') {
        const c = path === '/healthz' ? this.health() : this.readiness();
        return res
          .writeHead(c.ok ? 200 : 503)
          .end(c.ok ? 'ok' : `not ${path === '/healthz' ? 'healthy' : 'ready'}: ${c.reason}`);
      }
      if (path === '/metrics' && withMetrics) {
        this.beforeScrape();
        void this.metrics.registry
          .metrics()
          .then((m) => res.writeHead(200, { 'content-type': this.metrics.registry.contentType }).end(m));
        return;
      }
      res.writeHead(404).end('not found');
    });
    return new Promise((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        const why =
          err.code === 'EADDRINUSE'
            ? 'address already in use'
            : err.code === 'EACCES'
              ? 'permission denied'
              : err.code === 'EADDRNOTAVAIL'
                ? 'no such address on this machine'
                : (err.code ?? err.message);
        reject(new ConfigError(`${flag} ${address}: ${why}`));
      });
      server.listen(port, host, () => {
        this.servers.push(server);
        resolve();
      });
    });
  }

  get address(): string | undefined {
    const a = this.servers[0]?.address();
    if (!a || typeof a !== 'object') return undefined;
    return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
  }

  close(): Promise<void> {
    return Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r())))).then(
      () => undefined,
    );
  }
}
