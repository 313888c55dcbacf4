// Closing a client on shutdown: what is idle closes at once, and a request a hung API holds is
// aborted once the grace has passed, rather than waiting out the request timeout.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  server?.close();
  server = undefined;
});

/** A loopback API that accepts every request and never answers. */
async function hungApi(): Promise<{ url: string; held: () => number }> {
  let held = 0;
  server = createServer((req) => {
    held++;
    req.resume();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, held: () => held };
}

const clientOf = (url: string) =>
  createClient({
    baseUrl: url,
    apiKey: 'k',
    rateLimitPerMinute: Infinity,
    timeouts: { headersMs: 60_000, bodyMs: 60_000 },
  });

describe('closing a client', () => {
  it('with a grace, aborts a request a hung API holds once the grace has passed', async () => {
    const api = await hungApi();
    const c = clientOf(api.url);
    const pending = c.ipPolicies.get('ipp_1').then(
      () => 'answered',
      () => 'failed',
    );
    while (api.held() === 0) await new Promise((r) => setTimeout(r, 10));
    const t0 = Date.now();
    await c.close(200);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
    expect(await pending).toBe('failed');
  });

  it('with nothing in flight, closes at once', async () => {
    const api = await hungApi();
    const c = clientOf(api.url);
    const t0 = Date.now();
    await c.close(10_000);
    expect(Date.now() - t0).toBeLessThan(1_000);
  });
});
