// The kind's bulk list, list after list: what each item says of its resource (as listed, its
// fingerprint, the time of its page) whether or not the resource changed since the last list.
import pino from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { remoteDigest } from '../../src/operator/runtime/engine/memo.ts';
import { indexKey } from '../../src/operator/runtime/state/conflicts.ts';
import { idsUnder, Observer } from '../../src/operator/runtime/state/observer.ts';

describe('a bulk list after another', () => {
  it('shows each resource as this list found it, changed or not, with its own page time', async () => {
    let resources = [
      { id: 'ipp_1', uri: 'u1', description: 'one' },
      { id: 'ipp_2', uri: 'u2', description: 'two' },
    ];
    let page = 1000;
    const observer = new Observer({
      kind: 'IPPolicy',
      list: async function* (onPage) {
        onPage(++page);
        yield* resources.map((r) => ({ ...r }));
      },
      log: pino({ level: 'silent' }),
    });
    const first = (await observer.refresh())!;
    resources = [
      { ...resources[0]!, description: 'changed' },
      resources[1]!,
      { id: 'ipp_3', uri: 'u3', description: 'new' },
    ];
    const second = (await observer.refresh())!;

    expect([...second.items.keys()]).toEqual(['ipp_1', 'ipp_2', 'ipp_3']);
    for (const r of resources) {
      const listed = second.items.get(r.id)!;
      expect(listed.remote).toEqual(r);
      expect(listed.digest).toBe(remoteDigest(r));
      expect(listed.at).toBe(1002);
    }
    // the last list's snapshot is as it was
    expect(first.items.get('ipp_1')!.remote.description).toBe('one');
    expect(first.items.get('ipp_2')!.at).toBe(1001);
    expect(first.items.has('ipp_3')).toBe(false);
    expect(second.items.get('ipp_2')!.digest).toBe(first.items.get('ipp_2')!.digest);
    expect(second.items.get('ipp_1')!.digest).not.toBe(first.items.get('ipp_1')!.digest);
  });
});

describe("a list that carries another kind's resources (an HTTPS edge's routes)", () => {
  const log = pino({ level: 'silent' });
  const route = (id: string, edge: string, match: string) => ({ id, uri: `u/${id}`, edge_id: edge, match });
  let edges: { id: string; uri: string; hostports: string[]; routes: ReturnType<typeof route>[] }[];
  let lists = 0;
  let failNext = false;
  beforeEach(() => {
    lists = 0;
    failNext = false;
    edges = [
      { id: 'edghts_1', uri: 'u1', hostports: ['a:443'], routes: [route('edghtsrt_1', 'edghts_1', '/')] },
      {
        id: 'edghts_2',
        uri: 'u2',
        hostports: ['b:443'],
        routes: [route('edghtsrt_2', 'edghts_2', '/'), route('edghtsrt_3', 'edghts_2', '/api')],
      },
    ];
  });
  async function* listEdges(onPage: (t: number) => void) {
    lists++;
    onPage(2000 + lists);
    yield* edges.slice(0, 1).map((e) => structuredClone(e));
    if (failNext) throw new Error('ERR_NGROK_500');
    yield* edges.slice(1).map((e) => structuredClone(e));
  }
  /** The two kinds' observers of one account, made in either order. */
  function pair(opts: { routesFirst?: boolean; withEdges?: boolean } = {}) {
    const made = new Map<string, Observer>();
    const make = (kind: string): Observer => {
      const o: Observer =
        kind === 'HTTPSEdge'
          ? new Observer({
              kind,
              list: listEdges,
              carries: { field: 'routes', observer: () => made.get('HTTPSEdgeRoute') },
              log,
            })
          : new Observer({
              kind,
              list: async function* (onPage) {
                for await (const e of listEdges(onPage)) yield* e.routes;
              },
              conflictKey: (r) =>
                indexKey(
                  `${(r as unknown as { edge_id: string }).edge_id} ${(r as unknown as { match: string }).match}`,
                ),
              carriedBy: () =>
                opts.withEdges === false ? undefined : (made.get('HTTPSEdge') ?? make('HTTPSEdge')),
              log,
            });
      made.set(kind, o);
      return o;
    };
    const [a, b] = opts.routesFirst
      ? [make('HTTPSEdgeRoute'), make('HTTPSEdge')]
      : [make('HTTPSEdge'), make('HTTPSEdgeRoute')];
    return opts.routesFirst ? { routes: a, edges: b } : { edges: a, routes: b };
  }

  it('observes both kinds with one list of edges, each as its own kind keeps it', async () => {
    const { edges: eo, routes: ro } = pair();
    const [e, r] = await Promise.all([eo.refresh(), ro.refresh()]);
    expect(lists).toBe(1);
    expect([...e!.items.keys()]).toEqual(['edghts_1', 'edghts_2']);
    // the edge as its create, get and update return it: without the routes, and fingerprinted so
    const { routes: _, ...bare } = edges[1]!;
    expect(e!.items.get('edghts_2')!.remote).toEqual(bare);
    expect(e!.items.get('edghts_2')!.digest).toBe(remoteDigest(bare));
    expect([...r!.items.keys()]).toEqual(['edghtsrt_1', 'edghtsrt_2', 'edghtsrt_3']);
    expect(r!.items.get('edghtsrt_3')!.remote).toEqual(edges[1]!.routes[1]);
    expect(r!.items.get('edghtsrt_3')!.at).toBe(2001);
    expect([...idsUnder(r, 'edghts_2 /api')]).toEqual(['edghtsrt_3']);
    // the routes' own refresh alone lists the edges, once
    await ro.refresh();
    expect(lists).toBe(2);
    expect(eo.latest!.startedAt).toBeGreaterThanOrEqual(e!.startedAt);
  });

  it('lists again for a carried kind that the running list did not take in', async () => {
    const made = new Map<string, Observer>();
    const eo = new Observer({
      kind: 'HTTPSEdge',
      list: listEdges,
      carries: { field: 'routes', observer: () => made.get('HTTPSEdgeRoute') },
      log,
    });
    const running = eo.refresh();
    const ro = new Observer({ kind: 'HTTPSEdgeRoute', list: listEdges, carriedBy: () => eo, log });
    made.set('HTTPSEdgeRoute', ro);
    const r = await ro.refresh();
    await running;
    expect(lists).toBe(2);
    expect([...r!.items.keys()]).toEqual(['edghtsrt_1', 'edghtsrt_2', 'edghtsrt_3']);
  });

  it('lists the routes itself when the edges have no observer here', async () => {
    const { routes: ro, edges: eo } = pair({ routesFirst: true, withEdges: false });
    const r = await ro.refresh();
    expect(lists).toBe(1);
    expect(eo.latest).toBeUndefined();
    expect([...r!.items.keys()]).toEqual(['edghtsrt_1', 'edghtsrt_2', 'edghtsrt_3']);
  });

  it("keeps both kinds' last lists, and says both are failing, when a list breaks off", async () => {
    const { edges: eo, routes: ro } = pair({ routesFirst: true });
    const [first] = await Promise.all([ro.refresh(), eo.refresh()]);
    edges[1]!.routes.pop();
    failNext = true;
    await Promise.all([eo.refresh(), ro.refresh()]);
    expect(lists).toBe(2);
    expect(eo.failing && ro.failing).toBe(true);
    expect(ro.latest).toBe(first);
    expect(ro.latest!.items.has('edghtsrt_3')).toBe(true);
    failNext = false;
    await ro.refresh();
    expect(eo.failing || ro.failing).toBe(false);
    expect(ro.latest!.items.has('edghtsrt_3')).toBe(false);
  });
});
