import { ConfigError } from './config-error.ts';

/** A value quoted for an error message: control characters escaped, so the message stays one line. */
const quote = (v: string) => JSON.stringify(v);

/**
 * host:port, [v6]:port or :port; port 0 picks a free one. `:port` leaves the host to Node: every
 * address, IPv6 and IPv4 alike where the node has IPv6 (`::`), else every IPv4 one; `0.0.0.0`
 * would leave an IPv6-only cluster's probes nothing to reach.
 */
export function parseListen(flag: string, value: string): { host: string | undefined; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]*)):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port > 65535)
    throw new ConfigError(
      `${flag}: ${quote(value)} is not host:port (e.g. 127.0.0.1:8080, :8080, [::1]:8080)`,
    );
  return { host: m[1] ?? (m[2] || undefined), port };
}
