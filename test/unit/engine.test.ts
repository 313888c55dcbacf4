import { afterEach, describe, expect, it, vi } from 'vitest';
import { decodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { ID_ANNOTATION } from '../../src/operator/runtime/constants.ts';
import { KubeError } from '../../src/operator/runtime/kube/kube.ts';
import { applyExamples, type EngineWorld, engineWorld } from '../support/engine-world.ts';

let w: EngineWorld;
afterEach(() => w?.close());

const onlyReads = (calls: Record<string, number>) =>
  Object.keys(calls).filter((k) => !/\.(get|list) 200$/.test(k));

describe('engine: every kind of deploy/examples', () => {
  it('converges; an unchanged object then costs nothing until its resync', async () => {
    w = await engineWorld();
    const objs = applyExamples(w);
    await w.converge();
    for (const o of objs)
      expect(w.ready(o.kind, o.name), `${o.kind} ${o.name}`).toMatchObject({ status: 'True' });
    w.calls();
    const writes = w.kube.writes;
    for (const o of objs) await w.reconcile(o.kind, o.name);
    expect(w.calls()).toEqual({});
    expect(w.kube.writes).toBe(writes);
  });

  it('at resync, reads each remote resource and finds it equal to the spec: no API write, no status write', async () => {
    // desired(spec) and observe(remote) agree for every field and module of every kind
    w = await engineWorld({ resyncMs: 0 });
    const objs = applyExamples(w);
    await w.converge();
    w.calls();
    const writes = w.kube.writes;
    for (const o of objs) await w.reconcile(o.kind, o.name);
    const calls = w.calls();
    expect(onlyReads(calls)).toEqual([]);
    expect(Object.values(calls).reduce((a, b) => a + b, 0)).toBe(objs.length);
    expect(w.kube.writes).toBe(writes);
  });
});

const EDGE = { hostports: ['app.example.com:443'] };
const status = (o: { status?: Record<string, unknown> } | undefined) =>
  (o?.status ?? {}) as Record<string, unknown>;
const idOf = (kind: string, name: string) => status(w.get(kind, name)).id as string;
const reasons = () => w.kube.events.map((e) => e.reason);
const writesOf = (calls: Record<string, number>) => onlyReads(calls).filter((k) => !/ 4\d\d$|5\d\d$/.test(k));

describe('engine: bulk observation', () => {
  it('an unchanged world observed in bulk: one list per kind, no GET, no write of any kind', async () => {
    w = await engineWorld({ bulk: true });
    const objs = applyExamples(w);
    await w.observe();
    await w.converge();
    for (const o of objs)
      expect(w.ready(o.kind, o.name), `${o.kind} ${o.name}`).toMatchObject({ status: 'True' });
    const writes = w.kube.writes;
    const events = w.kube.events.length;
    await new Promise((r) => setTimeout(r, 5));
    w.calls();
    await w.observe();
    for (const o of objs) await w.reconcile(o.kind, o.name);
    const calls = w.calls();
    expect(Object.keys(calls).filter((k) => !k.endsWith('.list 200'))).toEqual([]);
    expect(w.kube.writes - writes).toBe(0);
    expect(w.kube.events.slice(events)).toEqual([]);
  });

  it('a resource the API serves in a shape the operator does not know spoils no other object: the list stands, that object says what is wrong', async () => {
    w = await engineWorld({ bulk: true });
    for (const n of ['a', 'b', 'c']) w.apply('IPPolicy', n, { description: n });
    await w.observe();
    await w.converge();
    // the API's record of b turns into a shape the schema refuses
    const bad = w.emu.store
      .all('ipPolicies')
      .find((p) => p.id === idOf('IPPolicy', 'b'))! as unknown as Record<string, unknown>;
    bad.description = 42;
    await new Promise((r) => setTimeout(r, 5));
    await w.observe();
    w.calls();
    for (const n of ['a', 'b', 'c']) await w.reconcile('IPPolicy', n);
    // a and c compared with the list; b read alone, and its status names the field
    expect(w.calls()).toEqual({ 'ipPolicies.get 200': 1 });
    for (const n of ['a', 'c']) expect(w.ready('IPPolicy', n)).toMatchObject({ status: 'True' });
    expect(w.ready('IPPolicy', 'b')).toMatchObject({ status: 'False', reason: 'APIUnavailable' });
    expect(w.ready('IPPolicy', 'b')?.message).toMatch(
      /in a shape the operator does not know \(description: /,
    );
  });

  it('drift found by the list: a changed field is put back, a resource missing from it is confirmed by a GET and recreated', async () => {
    w = await engineWorld({ bulk: true });
    w.apply('IPPolicy', 'a', { description: 'office' });
    w.apply('IPPolicy', 'b', {});
    await w.observe();
    await w.converge();
    await new Promise((r) => setTimeout(r, 5));
    const [a, b] = [idOf('IPPolicy', 'a'), idOf('IPPolicy', 'b')];
    await w.api.ipPolicies.update(a, { description: 'changed by hand' });
    await w.api.ipPolicies.delete(b);
    w.calls();
    await w.observe('IPPolicy');
    await w.reconcile('IPPolicy', 'a');
    await w.reconcile('IPPolicy', 'b');
    expect(w.calls()).toEqual({
      'ipPolicies.list 200': 1,
      'ipPolicies.update 200': 1,
      'ipPolicies.get 404': 1,
      'ipPolicies.create 201': 1,
    });
    expect((await w.api.ipPolicies.get(a)).description).toBe('office');
    expect(idOf('IPPolicy', 'b')).not.toBe(b);
  });
});

describe('engine cases (fake Kubernetes, in-process emulator)', () => {
  it('create: one API call, a finalizer, Ready with the id in status in 2 object writes; the id annotation when the queues are idle', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'corp', { description: 'office' });
    expect(await w.reconcile('IPPolicy', 'corp')).toEqual({});
    expect(w.calls()).toEqual({ 'ipPolicies.create 201': 1 });
    let o = w.get('IPPolicy', 'corp')!;
    const id = status(o).id;
    expect(id).toMatch(/^ipp_/);
    expect(o.metadata.finalizers).toEqual(['edge.tunnel.dev/finalizer']);
    expect(w.ready('IPPolicy', 'corp')).toMatchObject({ status: 'True', reason: 'Synced' });
    expect(w.kube.writes).toBe(2);
    expect(reasons()).toEqual(['Created']);
    // until then the create-pending mark stands: a crash is recovered from status.id
    expect(Object.keys(o.metadata.annotations ?? {})).toEqual(['edge.tunnel.dev/create-pending']);

    // work arriving stops it; while busy, only one that waited a resync period goes
    expect(await w.recordIds('IPPolicy', () => true)).toBe(0);
    expect(await w.recordIds('IPPolicy', () => false, { olderThanMs: 60_000 })).toBe(0);
    // an idle moment writes it, once
    expect(await w.recordIds('IPPolicy')).toBe(1);
    o = w.get('IPPolicy', 'corp')!;
    expect(o.metadata.annotations).toEqual({ 'edge.tunnel.dev/id': id });
    expect(w.kube.writes).toBe(3);
    expect(await w.recordIds('IPPolicy')).toBe(0);
    // and the object is still unchanged: no API call, no write
    w.calls();
    await w.reconcile('IPPolicy', 'corp');
    expect(w.calls()).toEqual({});
    expect(w.kube.writes).toBe(3);
  });

  it('id annotations overdue by a resync period are written even while busy, a few at a time', async () => {
    w = await engineWorld();
    for (const name of ['a', 'b', 'c']) {
      w.apply('IPPolicy', name, {});
      await w.reconcile('IPPolicy', name);
    }
    // the manager's busy path: only overdue ones (all are, with 0), at most `max` per check
    expect(await w.recordIds('IPPolicy', () => true, { olderThanMs: 0, max: 2 })).toBe(0);
    expect(await w.recordIds('IPPolicy', () => false, { olderThanMs: 0, max: 2 })).toBe(2);
    expect(await w.recordIds('IPPolicy')).toBe(1);
    for (const name of ['a', 'b', 'c'])
      expect(w.get('IPPolicy', name)!.metadata.annotations?.['edge.tunnel.dev/id']).toBe(
        idOf('IPPolicy', name),
      );
  });

  it('adopt: an existing resource named by annotation is updated to the spec and marked, not created', async () => {
    w = await engineWorld();
    const existing = await w.api.ipPolicies.create({ description: 'made by hand' });
    w.apply('IPPolicy', 'corp', { description: 'office' }, { 'edge.tunnel.dev/id': existing.id });
    w.calls();
    await w.reconcile('IPPolicy', 'corp');
    const calls = w.calls();
    expect(calls['ipPolicies.create 201']).toBeUndefined();
    expect(calls['ipPolicies.update 200']).toBe(1);
    expect(idOf('IPPolicy', 'corp')).toBe(existing.id);
    const remote = await w.api.ipPolicies.get(existing.id);
    expect(remote.description).toBe('office');
    expect(remote.metadata).toContain(w.get('IPPolicy', 'corp')!.metadata.uid);
    expect(reasons()).toContain('Adopted');
  });

  it('adopt: an id that does not exist stalls with AdoptionFailed and creates nothing', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'corp', {}, { 'edge.tunnel.dev/id': 'ipp_doesnotexist1' });
    await w.reconcile('IPPolicy', 'corp');
    expect(w.ready('IPPolicy', 'corp')).toMatchObject({ status: 'False', reason: 'AdoptionFailed' });
    expect(w.emu.store.all('ipPolicies')).toHaveLength(0);
  });

  it('OwnedElsewhere: a resource another installation marked is not taken over or changed', async () => {
    w = await engineWorld();
    const marker = JSON.stringify({
      'edge.tunnel.dev/owner': { cluster: 'other-cluster', uid: 'u-1', object: 'IPPolicy/x/y' },
      metadata: '',
    });
    const theirs = await w.api.ipPolicies.create({ description: 'theirs', metadata: marker });
    w.apply('IPPolicy', 'corp', { description: 'mine' }, { 'edge.tunnel.dev/id': theirs.id });
    w.calls();
    await w.reconcile('IPPolicy', 'corp');
    expect(w.ready('IPPolicy', 'corp')).toMatchObject({ status: 'False', reason: 'OwnedElsewhere' });
    expect(writesOf(w.calls())).toEqual([]);
    expect((await w.api.ipPolicies.get(theirs.id)).description).toBe('theirs');
  });

  it('OwnedElsewhere per object: another live object’s resource is not adopted or changed; once that object is gone, it may be', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'corp', { description: 'office' });
    await w.converge();
    const id = idOf('IPPolicy', 'corp');
    w.apply('IPPolicy', 'steal', { description: 'hijacked' }, { 'edge.tunnel.dev/id': id });
    w.calls();
    await w.reconcile('IPPolicy', 'steal');
    expect(w.ready('IPPolicy', 'steal')).toMatchObject({
      status: 'False',
      reason: 'OwnedElsewhere',
      message: `${id} is managed by IPPolicy corp; not taking it over`,
    });
    expect(writesOf(w.calls())).toEqual([]);
    expect((await w.api.ipPolicies.get(id)).description).toBe('office');
    // the owner deleted with Retain: the resource is free to adopt
    w.apply('IPPolicy', 'corp', { description: 'office', deletionPolicy: 'Retain' });
    await w.reconcile('IPPolicy', 'corp');
    w.kube.delete('ippolicies', 'team', 'corp');
    await w.reconcile('IPPolicy', 'corp');
    expect(w.get('IPPolicy', 'corp')).toBeUndefined();
    w.apply('IPPolicy', 'steal', { description: 'adopted' });
    await w.reconcile('IPPolicy', 'steal');
    expect(idOf('IPPolicy', 'steal')).toBe(id);
    expect((await w.api.ipPolicies.get(id)).description).toBe('adopted');
  });

  it('a finalizer removed by hand from a live object is put back at the next reconcile, with a Warning Event', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'corp', {});
    await w.converge();
    await w.kube.patch(
      { group: 'edge.tunnel.dev', version: 'v1alpha1', plural: 'ippolicies' },
      'team',
      'corp',
      { metadata: { finalizers: null } },
    );
    w.calls();
    await w.reconcile('IPPolicy', 'corp');
    expect(w.get('IPPolicy', 'corp')!.metadata.finalizers).toEqual(['edge.tunnel.dev/finalizer']);
    expect(reasons()).toContain('FinalizerRestored');
    expect(w.calls()).toEqual({});
  });

  it('an immutable field that differs stalls with the field named; the API is not written', async () => {
    w = await engineWorld();
    const policy = await w.api.ipPolicies.create({});
    const rule = await w.api.ipPolicyRules.create({
      cidr: '10.0.0.0/8',
      action: 'deny',
      ip_policy_id: policy.id,
    });
    w.apply(
      'IPPolicyRule',
      'r',
      { cidr: '10.0.0.0/8', action: 'allow', ipPolicyID: policy.id },
      { 'edge.tunnel.dev/id': rule.id },
    );
    w.calls();
    expect(await w.reconcile('IPPolicyRule', 'r')).toEqual({});
    expect(w.ready('IPPolicyRule', 'r')).toMatchObject({ status: 'False', reason: 'ImmutableFieldDiffers' });
    expect(w.ready('IPPolicyRule', 'r')?.message).toContain('action');
    expect(writesOf(w.calls())).toEqual([]);
    expect(w.kube.events.at(-1)).toMatchObject({ type: 'Warning', reason: 'ImmutableFieldDiffers' });
  });

  it('429 on a new object: Reconciling/APIThrottled, retried after Retry-After; a Ready object keeps Ready', async () => {
    w = await engineWorld({ resyncMs: 0 });
    w.apply('IPPolicy', 'ready', {});
    await w.reconcile('IPPolicy', 'ready');
    w.emu.faults.set({ rateLimitRate: 1, retryAfterSeconds: 7 });
    w.apply('IPPolicy', 'new', {});
    expect(await w.reconcile('IPPolicy', 'new')).toEqual({ requeueAfterMs: 7000 });
    expect(w.ready('IPPolicy', 'new')).toMatchObject({ status: 'False', reason: 'APIThrottled' });
    const before = w.get('IPPolicy', 'ready')!;
    expect(await w.reconcile('IPPolicy', 'ready')).toEqual({ requeueAfterMs: 7000 });
    expect(w.get('IPPolicy', 'ready')!.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    w.emu.faults.set({});
    await w.reconcile('IPPolicy', 'new');
    expect(w.ready('IPPolicy', 'new')).toMatchObject({ status: 'True' });
  });

  it('503: APIUnavailable with a backoff retry, then one resource when the API is back', async () => {
    w = await engineWorld();
    w.emu.faults.set({ errorRate: 1, errorStatuses: [503] });
    w.apply('IPPolicy', 'corp', {});
    expect(await w.reconcile('IPPolicy', 'corp')).toEqual({ retry: true });
    expect(w.ready('IPPolicy', 'corp')).toMatchObject({ status: 'False', reason: 'APIUnavailable' });
    expect(reasons()).toContain('APIUnavailable');
    w.emu.faults.set({});
    await w.reconcile('IPPolicy', 'corp');
    expect(w.ready('IPPolicy', 'corp')).toMatchObject({ status: 'True' });
    expect(w.emu.store.all('ipPolicies')).toHaveLength(1);
  });

  it('crash after the API create, before the id was recorded: found by its owner marker, not created twice', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'corp', {});
    const uid = w.get('IPPolicy', 'corp')!.metadata.uid!;
    const marker = JSON.stringify({
      'edge.tunnel.dev/owner': { cluster: 'cluster-under-test', uid, object: 'IPPolicy/team/corp' },
      metadata: '',
    });
    const created = await w.api.ipPolicies.create({ metadata: marker });
    await w.kube.patch(
      { group: 'edge.tunnel.dev', version: 'v1alpha1', plural: 'ippolicies' },
      'team',
      'corp',
      {
        metadata: {
          finalizers: ['edge.tunnel.dev/finalizer'],
          annotations: { 'edge.tunnel.dev/create-pending': 'x' },
        },
      },
    );
    w.calls();
    await w.reconcile('IPPolicy', 'corp');
    expect(w.calls()['ipPolicies.create 201']).toBeUndefined();
    expect(idOf('IPPolicy', 'corp')).toBe(created.id);
    expect(w.get('IPPolicy', 'corp')!.metadata.annotations).toEqual({ 'edge.tunnel.dev/id': created.id });
    expect(reasons()).toContain('Recovered');
    expect(w.emu.store.all('ipPolicies')).toHaveLength(1);
  });

  it('restored from a backup without status (a new uid, the mark older than the object): found by its name; a new object of the same name is not', async () => {
    w = await engineWorld();
    const marker = (uid: string) =>
      JSON.stringify({
        'edge.tunnel.dev/owner': { cluster: 'cluster-under-test', uid, object: 'IPPolicy/team/corp' },
        metadata: '',
      });
    // the resource the object had before the backup was restored
    const before = await w.api.ipPolicies.create({ metadata: marker('uid-before-restore') });
    const mark = (at: string) => ({ 'edge.tunnel.dev/create-pending': at });
    w.apply('IPPolicy', 'corp', {}, mark('2026-01-01T00:00:00.000Z'));
    w.calls();
    await w.reconcile('IPPolicy', 'corp');
    expect(w.calls()['ipPolicies.create 201']).toBeUndefined();
    expect(idOf('IPPolicy', 'corp')).toBe(before.id);
    expect(w.emu.store.all('ipPolicies')).toHaveLength(1);
    // the marker now names the restored object
    const uid = w.get('IPPolicy', 'corp')!.metadata.uid!;
    expect(JSON.parse((await w.api.ipPolicies.get(before.id)).metadata!)['edge.tunnel.dev/owner'].uid).toBe(
      uid,
    );

    // a mark written after the object was created is this operator's own: only the uid counts
    // (not found by it, the create waits to be sure the last one is not made late)
    w.apply('IPPolicy', 'other', {}, mark(new Date(Date.now() + 60_000).toISOString()));
    await w.api.ipPolicies.create({
      metadata: marker('uid-of-a-deleted-object').replace('IPPolicy/team/corp', 'IPPolicy/team/other'),
    });
    expect((await w.reconcile('IPPolicy', 'other')).requeueAfterMs).toBeGreaterThan(4_000);
    expect(idOf('IPPolicy', 'other')).toBeUndefined();
    expect(w.emu.store.all('ipPolicies')).toHaveLength(2);
  });

  it('modules: a module added is PUT, a module dropped from the spec is DELETEd', async () => {
    w = await engineWorld();
    w.apply('HTTPSEdge', 'app', EDGE);
    w.apply('HTTPSEdgeRoute', 'root', {
      edgeRef: { name: 'app' },
      matchType: 'path_prefix',
      match: '/',
      compression: {},
    });
    await w.converge();
    const edge = idOf('HTTPSEdge', 'app');
    const route = idOf('HTTPSEdgeRoute', 'root');
    expect((await w.api.httpsEdgeRoutes.get(edge, route)).compression).toMatchObject({ enabled: true });
    w.calls();
    w.apply('HTTPSEdgeRoute', 'root', { compression: null, websocketTCPConverter: {} });
    await w.reconcile('HTTPSEdgeRoute', 'root');
    const calls = w.calls();
    expect(writesOf(calls).sort()).toEqual([
      'httpsEdgeRouteModules.compression.delete 204',
      'httpsEdgeRouteModules.websocket_tcp_converter.put 200',
    ]);
    const now = await w.api.httpsEdgeRoutes.get(edge, route);
    expect(now.compression).toBeNull();
    expect(now.websocket_tcp_converter).toMatchObject({ enabled: true });
    expect(reasons()).toContain('ModulesUpdated');
  });

  it('secret rotation: a changed Secret value is PUT again, an unchanged one never; the value stays out of status', async () => {
    w = await engineWorld({ resyncMs: 0 });
    w.secrets.set('auth', { oidc: 'first-secret-value' });
    w.apply('HTTPSEdge', 'app', EDGE);
    w.apply('HTTPSEdgeRoute', 'root', {
      edgeRef: { name: 'app' },
      matchType: 'path_prefix',
      match: '/',
      oidc: {
        issuer: 'https://id.example.com',
        clientID: 'app',
        clientSecretRef: { name: 'auth', key: 'oidc' },
        scopes: ['openid'],
      },
    });
    await w.converge();
    w.calls();
    await w.reconcile('HTTPSEdgeRoute', 'root');
    expect(writesOf(w.calls())).toEqual([]);
    w.secrets.set('auth', { oidc: 'rotated-secret-value' });
    await w.reconcile('HTTPSEdgeRoute', 'root');
    expect(writesOf(w.calls())).toEqual(['httpsEdgeRouteModules.oidc.put 200']);
    const remote = await w.api.httpsEdgeRoutes.get(idOf('HTTPSEdge', 'app'), idOf('HTTPSEdgeRoute', 'root'));
    expect(remote.oidc?.client_secret).toBe('rotated-secret-value');
    const o = w.get('HTTPSEdgeRoute', 'root')!;
    expect(JSON.stringify(o)).not.toMatch(/secret-value/);
    expect(JSON.stringify(w.kube.events)).not.toMatch(/secret-value/);
  });

  it('stale status: SAML removed from a route takes status.saml with it, Ready stays True', async () => {
    w = await engineWorld();
    w.apply('HTTPSEdge', 'app', EDGE);
    w.apply('HTTPSEdgeRoute', 'sso', {
      edgeRef: { name: 'app' },
      matchType: 'path_prefix',
      match: '/',
      saml: { idpMetadata: '<EntityDescriptor/>' },
    });
    await w.converge();
    expect(status(w.get('HTTPSEdgeRoute', 'sso')).saml).toMatchObject({ entityID: expect.any(String) });
    w.apply('HTTPSEdgeRoute', 'sso', { saml: null });
    await w.reconcile('HTTPSEdgeRoute', 'sso');
    expect(status(w.get('HTTPSEdgeRoute', 'sso'))).not.toHaveProperty('saml');
    expect(w.ready('HTTPSEdgeRoute', 'sso')).toMatchObject({ status: 'True' });
  });

  it('drift: a field changed behind the operator is put back; a deleted resource is recreated', async () => {
    w = await engineWorld({ resyncMs: 0 });
    w.apply('IPPolicy', 'corp', { description: 'office' });
    await w.reconcile('IPPolicy', 'corp');
    const id = idOf('IPPolicy', 'corp');
    await w.api.ipPolicies.update(id, { description: 'changed by hand' });
    w.calls();
    await w.reconcile('IPPolicy', 'corp');
    expect(writesOf(w.calls())).toEqual(['ipPolicies.update 200']);
    expect((await w.api.ipPolicies.get(id)).description).toBe('office');
    expect(reasons()).toContain('DriftCorrected');
    await w.api.ipPolicies.delete(id);
    await w.reconcile('IPPolicy', 'corp');
    expect(idOf('IPPolicy', 'corp')).not.toBe(id);
    expect(w.emu.store.all('ipPolicies')).toHaveLength(1);
    expect(w.kube.events.at(-1)).toMatchObject({ type: 'Warning', reason: 'Recreated' });
  });

  it.each([
    ['the next sync adopts it', false],
    ['a delete meanwhile deletes it', true],
  ])(
    'a recreate whose answer is lost is found by its marker, not made twice nor orphaned: %s',
    async (_, deleting) => {
      w = await engineWorld({ resyncMs: 0 });
      w.apply('IPPolicy', 'corp', {});
      await w.reconcile('IPPolicy', 'corp');
      await w.api.ipPolicies.delete(idOf('IPPolicy', 'corp'));
      // the API makes the new resource, and the answer never arrives
      w.emu.faults.set({ dropRate: 1, methods: ['POST'] });
      await w.reconcile('IPPolicy', 'corp');
      const made = w.emu.store.all('ipPolicies').map((p) => p.id);
      expect(made).toHaveLength(1);
      w.emu.faults.set({});
      w.calls();
      if (deleting) {
        w.kube.delete('ippolicies', 'team', 'corp');
        await w.reconcile('IPPolicy', 'corp');
        expect(w.get('IPPolicy', 'corp')).toBeUndefined();
        expect(w.emu.store.all('ipPolicies')).toEqual([]);
      } else {
        await w.reconcile('IPPolicy', 'corp');
        expect(w.calls()['ipPolicies.create 201']).toBeUndefined();
        expect(idOf('IPPolicy', 'corp')).toBe(made[0]);
        expect(w.ready('IPPolicy', 'corp')).toMatchObject({ status: 'True' });
        expect(reasons()).toContain('Recovered');
        expect(w.emu.store.all('ipPolicies').map((p) => p.id)).toEqual(made);
      }
    },
  );

  it('a create a gateway answered 504 while the API made it later is found, not made twice', async () => {
    w = await engineWorld({ bulk: true });
    w.apply('IPPolicy', 'corp', {});
    // the gateway gives up at once; the API makes the policy 300 ms later
    w.emu.faults.set({ lateRate: 1, lateMs: 300, methods: ['POST'], maxFaults: 1 });
    await w.reconcile('IPPolicy', 'corp');
    expect(w.emu.store.all('ipPolicies')).toEqual([]);
    // looked for at once: not there yet, and not made again
    const waiting = await w.reconcile('IPPolicy', 'corp');
    console.log(
      'WAITING',
      waiting,
      JSON.stringify(w.get('IPPolicy', 'corp')?.status),
      JSON.stringify(w.calls()),
    );
    expect(waiting.requeueAfterMs).toBeGreaterThan(4_000);
    expect(w.calls()['ipPolicies.create 201']).toBeUndefined();
    await new Promise((r) => setTimeout(r, 500));
    const made = w.emu.store.all('ipPolicies').map((p) => p.id);
    expect(made).toHaveLength(1);
    // before its next look nothing is listed again (each look lists the whole kind)
    w.calls();
    expect((await w.reconcile('IPPolicy', 'corp')).requeueAfterMs).toBeGreaterThan(4_000);
    expect(w.calls()).toEqual({});
    // looked for again 5 s after the failure: found by its marker
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 5_000);
    await w.reconcile('IPPolicy', 'corp').finally(() => vi.useRealTimers());
    expect(idOf('IPPolicy', 'corp')).toBe(made[0]);
    expect(w.ready('IPPolicy', 'corp')).toMatchObject({ status: 'True' });
    expect(reasons()).toContain('Recovered');
    expect(w.emu.store.all('ipPolicies').map((p) => p.id)).toEqual(made);
  });

  it('a delete while a create may still be made waits for it, and deletes what was made late', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'corp', {});
    w.emu.faults.set({ lateRate: 1, lateMs: 300, methods: ['POST'], maxFaults: 1 });
    await w.reconcile('IPPolicy', 'corp');
    w.kube.delete('ippolicies', 'team', 'corp');
    // not found yet: the finalizer stays
    expect((await w.reconcile('IPPolicy', 'corp')).requeueAfterMs).toBeGreaterThan(4_000);
    expect(w.get('IPPolicy', 'corp')).toBeDefined();
    await new Promise((r) => setTimeout(r, 500));
    expect(w.emu.store.all('ipPolicies')).toHaveLength(1);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 5_000);
    await w.reconcile('IPPolicy', 'corp').finally(() => vi.useRealTimers());
    expect(w.get('IPPolicy', 'corp')).toBeUndefined();
    expect(w.emu.store.all('ipPolicies')).toEqual([]);
  });

  it('a create the API answered with its own error is made again at once: nothing to wait for', async () => {
    w = await engineWorld({ bulk: true });
    w.apply('IPPolicy', 'corp', {});
    w.emu.faults.set({ errorRate: 1, errorStatuses: [503], methods: ['POST'], maxFaults: 1 });
    await w.reconcile('IPPolicy', 'corp');
    expect(w.calls()['ipPolicies.create 503']).toBe(1);
    await w.reconcile('IPPolicy', 'corp');
    expect(w.calls()['ipPolicies.create 201']).toBe(1);
    expect(w.emu.store.all('ipPolicies')).toHaveLength(1);
    expect(w.ready('IPPolicy', 'corp')).toMatchObject({ status: 'True' });
  });

  it('a spec changed while a reconcile is in flight is applied by the next reconcile, not taken as done', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'corp', { description: 'one' });
    await w.reconcile('IPPolicy', 'corp');
    const id = idOf('IPPolicy', 'corp');
    w.apply('IPPolicy', 'corp', { description: 'two' });
    // the next edit lands after the API update for 'two', before its status is written
    const patch = w.kube.patch.bind(w.kube);
    let edited = false;
    w.kube.patch = ((...args: Parameters<typeof patch>) => {
      if (args[5] === 'status' && !edited) {
        edited = true;
        w.apply('IPPolicy', 'corp', { description: 'three' });
      }
      return patch(...args);
    }) as typeof patch;
    await w.reconcile('IPPolicy', 'corp');
    expect(edited).toBe(true);
    expect((await w.api.ipPolicies.get(id)).description).toBe('two');
    const o = w.get('IPPolicy', 'corp')!;
    expect(status(o).observedGeneration).toBe(o.metadata.generation! - 1);
    // the watch event of that edit: 'three' is still to be done
    await w.reconcile('IPPolicy', 'corp');
    expect((await w.api.ipPolicies.get(id)).description).toBe('three');
    const after = w.get('IPPolicy', 'corp')!;
    expect(status(after).observedGeneration).toBe(after.metadata.generation);
  });

  it('references: a route waits quietly for its edge (no status write for a short wait), then syncs', async () => {
    w = await engineWorld();
    w.apply('HTTPSEdgeRoute', 'root', { edgeRef: { name: 'app' }, matchType: 'path_prefix', match: '/' });
    const out = await w.reconcile('HTTPSEdgeRoute', 'root');
    expect(out.requeueAfterMs).toBeGreaterThan(0);
    expect(out.requeueAfterMs).toBeLessThanOrEqual(5000);
    expect(w.get('HTTPSEdgeRoute', 'root')!.status).toBeUndefined();
    w.apply('HTTPSEdge', 'app', EDGE);
    await w.converge();
    expect(status(w.get('HTTPSEdgeRoute', 'root')).edgeID).toBe(idOf('HTTPSEdge', 'app'));
  });

  it('references: waiting for an object that exists and is on its way stays quiet for a minute, not 5 s', async () => {
    w = await engineWorld();
    w.apply('HTTPSEdge', 'app', EDGE);
    w.apply('HTTPSEdgeRoute', 'root', { edgeRef: { name: 'app' }, matchType: 'path_prefix', match: '/' });
    const out = await w.reconcile('HTTPSEdgeRoute', 'root');
    expect(out.requeueAfterMs).toBeGreaterThan(55_000);
    expect(w.get('HTTPSEdgeRoute', 'root')!.status).toBeUndefined();
    expect(w.kube.events).toEqual([]);
  });

  it('delete: the remote resource goes, then the finalizer; Retain leaves the resource in place', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'gone', {});
    w.apply('IPPolicy', 'kept', { deletionPolicy: 'Retain' });
    await w.converge();
    const kept = idOf('IPPolicy', 'kept');
    w.kube.delete('ippolicies', 'team', 'gone');
    w.kube.delete('ippolicies', 'team', 'kept');
    await w.reconcile('IPPolicy', 'gone');
    await w.reconcile('IPPolicy', 'kept');
    expect(w.get('IPPolicy', 'gone')).toBeUndefined();
    expect(w.get('IPPolicy', 'kept')).toBeUndefined();
    expect(w.emu.store.all('ipPolicies').map((p) => p.id)).toEqual([kept]);
    expect(reasons()).toEqual(expect.arrayContaining(['Deleted', 'Retained']));
    // nothing is kept for them: under churn, what a deleted object left would add up
    expect(w.memo('IPPolicy', 'gone')).toBeUndefined();
    expect(w.memo('IPPolicy', 'kept')).toBeUndefined();
    // nor for one gone before its next reconcile (its finalizer taken off by hand)
    w.apply('IPPolicy', 'brief', {});
    await w.reconcile('IPPolicy', 'brief');
    expect(w.memo('IPPolicy', 'brief')).toBeDefined();
    await w.kube.patch(
      { group: 'edge.tunnel.dev', version: 'v1alpha1', plural: 'ippolicies' },
      'team',
      'brief',
      { metadata: { finalizers: null } },
    );
    w.kube.delete('ippolicies', 'team', 'brief');
    expect(w.get('IPPolicy', 'brief')).toBeUndefined();
    await w.reconcile('IPPolicy', 'brief');
    expect(w.memo('IPPolicy', 'brief')).toBeUndefined();
  });

  it('delete: a finalizer patch that meets a newer version is retried without a second DELETE of the resource', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'gone', {});
    await w.converge();
    w.kube.delete('ippolicies', 'team', 'gone');
    // someone else writes the object between the API DELETE and the finalizer's removal
    const patch = w.kube.patch.bind(w.kube);
    let conflicts = 1;
    w.kube.patch = (async (...args: Parameters<typeof patch>) => {
      if (conflicts-- > 0) throw new KubeError(409, 'the object has been modified', 'Conflict');
      return patch(...args);
    }) as typeof patch;
    w.calls();
    expect(await w.reconcile('IPPolicy', 'gone')).toEqual({ retry: true });
    expect(w.get('IPPolicy', 'gone')).toBeDefined();
    await w.reconcile('IPPolicy', 'gone');
    expect(w.get('IPPolicy', 'gone')).toBeUndefined();
    expect(w.calls()).toEqual({ 'ipPolicies.delete 204': 1 });
    expect(reasons().filter((r) => r === 'Deleted')).toHaveLength(1);
  });

  it('delete in use: a referenced object waits (InUse, naming its referrer) and goes once the referrer has', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'corp', {});
    w.apply('IPPolicyRule', 'office', {
      ipPolicyRef: { name: 'corp' },
      cidr: '203.0.113.0/24',
      action: 'allow',
    });
    await w.converge();
    const id = idOf('IPPolicy', 'corp');
    w.kube.delete('ippolicies', 'team', 'corp');
    w.calls();
    await w.reconcile('IPPolicy', 'corp');
    expect(w.ready('IPPolicy', 'corp')).toMatchObject({
      status: 'False',
      reason: 'InUse',
      message: expect.stringContaining(`${id} is still referenced by IPPolicyRule office`),
    });
    expect(w.calls()).toEqual({});
    expect(w.emu.store.all('ipPolicies').map((p) => p.id)).toEqual([id]);
    w.kube.delete('ippolicyrules', 'team', 'office');
    await w.reconcile('IPPolicyRule', 'office');
    await w.reconcile('IPPolicy', 'corp');
    expect(w.get('IPPolicy', 'corp')).toBeUndefined();
    expect(w.emu.store.all('ipPolicies')).toEqual([]);
  });
});

describe('engine: a namespace is a tenant', () => {
  it('an id of a resource another namespace manages is refused (ReferenceNotAllowed), with no API call', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'corp', {}, undefined, 'other');
    await w.converge();
    const theirs = status(w.get('IPPolicy', 'corp', 'other')).id as string;
    w.apply('IPPolicyRule', 'office', { ipPolicyID: theirs, cidr: '203.0.113.0/24', action: 'allow' });
    w.calls();
    await w.reconcile('IPPolicyRule', 'office');
    expect(w.ready('IPPolicyRule', 'office')).toMatchObject({
      status: 'False',
      reason: 'ReferenceNotAllowed',
      message: expect.stringContaining(
        `spec.ipPolicyID: ${theirs} is managed by an object in another namespace`,
      ),
    });
    expect(w.calls()).toEqual({});
    expect(reasons()).toContain('ReferenceNotAllowed');
  });

  it('an id annotation naming a resource another namespace adopted without a write (no marker) is refused, to adopt and to observe', async () => {
    w = await engineWorld();
    const made = await w.api.ipPolicies.create({ description: 'made outside the cluster' });
    w.apply(
      'IPPolicy',
      'theirs',
      { description: 'made outside the cluster' },
      { [ID_ANNOTATION]: made.id },
      'other',
    );
    await w.converge();
    expect(status(w.get('IPPolicy', 'theirs', 'other')).id).toBe(made.id);
    // the precondition: adopting an equal resource wrote no owner marker
    expect(decodeMetadata((await w.api.ipPolicies.get(made.id)).metadata).owner).toBeUndefined();
    w.apply('IPPolicy', 'take', { description: 'taken' }, { [ID_ANNOTATION]: made.id });
    w.apply('IPPolicy', 'peek', { managementPolicy: 'Observe' }, { [ID_ANNOTATION]: made.id });
    w.calls();
    for (const name of ['take', 'peek']) {
      await w.reconcile('IPPolicy', name);
      expect(w.ready('IPPolicy', name)).toMatchObject({
        status: 'False',
        reason: 'OwnedElsewhere',
        message: `${made.id} is managed by an object in another namespace; not taking it over`,
      });
      expect(status(w.get('IPPolicy', name)).id).toBeUndefined();
    }
    expect(w.calls()).toEqual({});
    expect((await w.api.ipPolicies.get(made.id)).description).toBe('made outside the cluster');
  });

  it('an object with its own id in status goes on when its annotation is changed to another namespace’s id (status decides)', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'theirs', {}, undefined, 'other');
    w.apply('IPPolicy', 'corp', { description: 'ours' });
    await w.converge();
    const ours = idOf('IPPolicy', 'corp');
    const theirs = status(w.get('IPPolicy', 'theirs', 'other')).id as string;
    await w.kube.patch(
      { group: 'edge.tunnel.dev', version: 'v1alpha1', plural: 'ippolicies' },
      'team',
      'corp',
      { metadata: { annotations: { [ID_ANNOTATION]: theirs } } },
    );
    w.apply('IPPolicy', 'corp', { description: 'ours, edited' });
    await w.reconcile('IPPolicy', 'corp');
    expect(w.ready('IPPolicy', 'corp')?.status).toBe('True');
    expect(idOf('IPPolicy', 'corp')).toBe(ours);
    expect((await w.api.ipPolicies.get(ours)).description).toBe('ours, edited');
  });

  it('the same id is this namespace’s own to reference: the rule is created in it', async () => {
    w = await engineWorld();
    w.apply('IPPolicy', 'corp', {});
    await w.converge();
    w.apply('IPPolicyRule', 'office', {
      ipPolicyID: idOf('IPPolicy', 'corp'),
      cidr: '203.0.113.0/24',
      action: 'allow',
    });
    await w.converge();
    expect(w.ready('IPPolicyRule', 'office')).toMatchObject({ status: 'True' });
  });
});
