// An API URL that hangs (accepts connections, never answers) or that is not the API (a web
// page): every waiting object says so within 30 s, as Reconciling/APIUnavailable with what was
// wrong and one Event each, and the operator logs the failure once, not per request.
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  condition,
  NAMESPACES,
  type OperatorProcess,
  obj,
  res,
  skipReason,
  startOperator,
  type World,
  waitFor,
  world,
} from './harness.ts';

const P = res('ippolicies');
const EVENTS = { group: '', version: 'v1', plural: 'events' };

const listen = (s: NetServer | Server) =>
  new Promise<number>((resolve) =>
    s.listen(0, '127.0.0.1', () => resolve((s.address() as { port: number }).port)),
  );

describe.skipIf(!!skipReason)('an API that hangs or is not the API', () => {
  let w: World;
  const sockets = new Set<Socket>();
  // accepts and reads, never answers
  const hung = createServer((s) => {
    sockets.add(s);
    s.on('data', () => {});
    s.on('close', () => sockets.delete(s));
  });
  const html = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><html><body>Welcome to our website</body></html>');
  });
  const ports: Record<string, number> = {};

  beforeAll(async () => {
    w = await world('apidown');
    ports.hung = await listen(hung);
    ports.html = await listen(html);
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    hung.close();
    html.close();
    await w?.close();
  });

  for (const [which, expected] of [
    ['hung', 'no answer within 5s'],
    ['html', "answered HTML (HTTP 200, text/html), not the API's JSON: is --api-url the API's base URL?"],
  ] as const)
    it(`${which}: two new objects show APIUnavailable within 30 s, one Event each, one log line`, async () => {
      const ns = `${w.ns}-${which}`;
      await w.kube.create(NAMESPACES, undefined, { metadata: { name: ns } });
      let op: OperatorProcess | undefined;
      try {
        op = await startOperator(w.emu, w.ns, [
          '--namespaces',
          ns,
          '--api-url',
          `http://127.0.0.1:${ports[which]}`,
          '--api-timeout',
          '5s',
        ]);
        const t0 = Date.now();
        for (const name of ['a', 'b']) await w.kube.create(P, ns, obj('IPPolicy', ns, name, {}));
        for (const name of ['a', 'b']) {
          const o = await waitFor(
            `${name} APIUnavailable`,
            async () => {
              const x = await w.kube.get(P, ns, name);
              return condition(x, 'Reconciling')?.reason === 'APIUnavailable' ? x : undefined;
            },
            30_000,
            200,
          );
          expect(condition(o, 'Reconciling')!.message).toContain(expected);
          expect(condition(o, 'Ready')?.status).toBe('False');
        }
        expect(Date.now() - t0).toBeLessThan(30_000);
        await new Promise((r) => setTimeout(r, 2000));
        const events = (await w.kube.list(EVENTS, ns)).items as unknown as {
          reason: string;
          involvedObject: { name: string };
          count?: number;
        }[];
        for (const name of ['a', 'b'])
          expect(
            events.filter((e) => e.reason === 'APIUnavailable' && e.involvedObject.name === name),
            name,
          ).toHaveLength(1);
        expect(op.logs.filter((l) => l.includes('Edge API unavailable'))).toHaveLength(1);
      } finally {
        await op?.kill();
        await w.kube.delete(NAMESPACES, undefined, ns).catch(() => {});
      }
    });
});
