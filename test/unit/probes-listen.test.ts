// `--listen :PORT` (the default in a cluster) serves every address of the pod: IPv6 and IPv4
// alike, so the kubelet's probes and a scrape reach it in an IPv4, dual-stack or IPv6-only
// cluster. An explicit host binds only that host.

import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ProbeServer } from '../../src/operator/runtime/manager/probes.ts';
import { createMetrics } from '../../src/operator/runtime/metrics.ts';

let probes: ProbeServer | undefined;
afterEach(async () => {
  await probes?.close();
  probes = undefined;
});

/** Whether this machine has IPv6 loopback (`::1` in the kernel's address list). */
const hasIpv6Loopback = () =>
  existsSync('/proc/net/if_inet6') && /^0{31}1 /m.test(readFileSync('/proc/net/if_inet6', 'utf8'));

const status = async (url: string) => (await fetch(url)).status;

describe('the probe address', () => {
  it.skipIf(!hasIpv6Loopback())(':PORT answers on IPv4 and on IPv6', async () => {
    probes = new ProbeServer(createMetrics());
    probes.readiness = () => ({ ok: true });
    await probes.listen('--listen', ':0', true);
    const port = /:(\d+)$/.exec(probes.address!)![1];
    expect(probes.address).toBe(`[::]:${port}`);
    expect(await status(`http://127.0.0.1:${port}/readyz`)).toBe(200);
    expect(await status(`http://[::1]:${port}/readyz`)).toBe(200);
    expect(await status(`http://[::1]:${port}/metrics`)).toBe(200);
  });

  it('an explicit IPv4 host binds that host only', async () => {
    probes = new ProbeServer(createMetrics());
    await probes.listen('--listen', '127.0.0.1:0', true);
    const port = /:(\d+)$/.exec(probes.address!)![1];
    expect(probes.address).toBe(`127.0.0.1:${port}`);
    await expect(fetch(`http://[::1]:${port}/healthz`)).rejects.toThrow();
  });
});
