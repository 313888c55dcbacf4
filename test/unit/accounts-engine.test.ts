// The engine with accounts, in process: two emulators are two accounts (two URLs, two keys);
// each object's requests go to its account's, references never cross accounts, an account
// that is not Ready holds its objects back, and a rotated key is used from the next request.
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { type Emulator, startEmulator } from '../../src/emulator/server.ts';
import type { AccountRef } from '../../src/operator/kinds/accounts.ts';
import { AccountRegistry } from '../../src/operator/runtime/accounts/registry.ts';
import {
  type AccountFacts,
  effectiveAccount,
  INSTALLATION,
  mayAdopt,
  mayHold,
  mayUse,
  resolveAccount,
} from '../../src/operator/runtime/accounts/resolve.ts';
import type { EngineAccounts } from '../../src/operator/runtime/engine/index.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { Budget } from '../../src/operator/runtime/scheduler/budget.ts';
import { type EngineWorld, engineWorld, NS } from '../support/engine-world.ts';

const B = `EdgeAccount/${NS}/b`;
const B_REF = { accountRef: { kind: 'EdgeAccount', name: 'b' } };

let w: EngineWorld;
let emuB: Emulator;
let registry: AccountRegistry;
afterEach(async () => {
  await registry?.closeAll();
  await w?.close();
  await emuB?.close();
});

/** The world's emulator is the installation's account; a second emulator is EdgeAccount b. */
async function twoAccounts(o: { installation?: boolean; edge?: string[]; cluster?: string[] } = {}) {
  emuB = await startEmulator({ port: 0 });
  registry = new AccountRegistry({
    client: (a) =>
      createClient({
        baseUrl: a.url,
        apiKey: a.key,
        gate: a.budget,
        retry: { maxAttempts: 1 },
        onCall: a.onCall,
      }),
  });
  const facts: AccountFacts = {
    installationEnabled: o.installation ?? true,
    edgeAccountExists: (ns, name) => ns === NS && (o.edge ?? ['b']).includes(name),
    // ClusterEdgeAccounts that admit no namespace
    clusterAccount: (name) => ((o.cluster ?? []).includes(name) ? { namespaces: ['elsewhere'] } : undefined),
    namespaceLabels: () => ({}),
    installationAdoptFrom: ['*'],
    operatorNamespace: 'edge-system',
  };
  const accounts: EngineAccounts = {
    accountOf: (obj: KubeObject) =>
      effectiveAccount(
        (obj.status ?? {}) as { id?: string; account?: string },
        resolveAccount(obj.metadata.namespace!, (obj.spec as { accountRef?: AccountRef }).accountRef, facts),
        (id) =>
          mayHold(id, obj.metadata.namespace!, (obj.spec as { accountRef?: AccountRef }).accountRef, facts),
      ),
    mayUse: (id, ns) => mayUse(id, ns, facts),
    mayHold: (obj, id) =>
      mayHold(id, obj.metadata.namespace!, (obj.spec as { accountRef?: AccountRef }).accountRef, facts),
    mayAdopt: (id, ns) => mayAdopt(id, ns, facts),
    use: (id) => {
      const u = registry.use(id);
      return 'phase' in u ? u : { client: u.client };
    },
  };
  w = await engineWorld({ accounts });
  registry.adopt(INSTALLATION, w.emu.url, w.api, new Budget({ perMinute: Infinity }));
  registry.set(B, { url: emuB.url, key: emuB.apiKey, perMinute: 600 });
  registry.mark(B, true);
}

const status = (kind: string, name: string) => (w.get(kind, name)?.status ?? {}) as Record<string, unknown>;
const cond = (kind: string, name: string, type: string) =>
  (
    status(kind, name).conditions as { type: string; status: string; reason: string; message: string }[]
  )?.find((c) => c.type === type);
const policiesIn = async (url: string, key: string) => {
  const c = createClient({ baseUrl: url, apiKey: key, rateLimitPerMinute: Infinity });
  const ids: string[] = [];
  for await (const p of c.ipPolicies.list()) ids.push(p.id);
  await c.close();
  return ids.sort();
};
const requestsTo = (emu: Emulator) => Object.values(emu.counters.snapshot()).reduce((a, b) => a + b, 0);

describe('engine with accounts', () => {
  it("each object's resource is made in its own account, and status says which", async () => {
    await twoAccounts();
    w.apply('IPPolicy', 'mine', {});
    w.apply('IPPolicy', 'theirs', B_REF);
    await w.converge();
    expect(w.ready('IPPolicy', 'mine')?.status).toBe('True');
    expect(w.ready('IPPolicy', 'theirs')?.status).toBe('True');
    expect(status('IPPolicy', 'mine').account).toBe(INSTALLATION);
    expect(status('IPPolicy', 'theirs').account).toBe(B);
    expect(await policiesIn(w.emu.url, w.emu.apiKey)).toEqual([status('IPPolicy', 'mine').id]);
    expect(await policiesIn(emuB.url, emuB.apiKey)).toEqual([status('IPPolicy', 'theirs').id]);
    // and a delete goes to the account holding the resource
    w.kube.delete('ippolicies', NS, 'theirs');
    await w.reconcile('IPPolicy', 'theirs');
    expect(w.get('IPPolicy', 'theirs')).toBeUndefined();
    expect(await policiesIn(emuB.url, emuB.apiKey)).toEqual([]);
    expect(await policiesIn(w.emu.url, w.emu.apiKey)).toHaveLength(1);
  });

  it('a reference to an object of another account: AccountMismatch naming both, and no API request', async () => {
    await twoAccounts();
    w.apply('IPPolicy', 'office', {});
    await w.converge();
    const before = [requestsTo(w.emu), requestsTo(emuB)];
    w.apply('IPPolicyRule', 'by-name', {
      ...B_REF,
      cidr: '10.0.0.0/8',
      action: 'allow',
      ipPolicyRef: { name: 'office' },
    });
    w.apply('IPPolicyRule', 'by-id', {
      ...B_REF,
      cidr: '10.0.0.0/8',
      action: 'allow',
      ipPolicyID: status('IPPolicy', 'office').id,
    });
    await w.reconcile('IPPolicyRule', 'by-name');
    await w.reconcile('IPPolicyRule', 'by-id');
    for (const name of ['by-name', 'by-id']) {
      const stalled = cond('IPPolicyRule', name, 'Stalled');
      expect(stalled?.reason, name).toBe('AccountMismatch');
      expect(stalled?.message).toMatch(
        /IPPolicy office\)? is in the installation's account, this object in EdgeAccount team\/b/,
      );
    }
    expect([requestsTo(w.emu), requestsTo(emuB)]).toEqual(before);
  });

  it('no account, or one that does not admit the namespace: stalled, and no API request', async () => {
    await twoAccounts({ installation: false, edge: [], cluster: ['shared'] });
    w.apply('IPPolicy', 'none', {});
    w.apply('IPPolicy', 'shared', { accountRef: { kind: 'ClusterEdgeAccount', name: 'shared' } });
    await w.reconcile('IPPolicy', 'none');
    await w.reconcile('IPPolicy', 'shared');
    expect(cond('IPPolicy', 'none', 'Stalled')).toMatchObject({ reason: 'NoAccount' });
    expect(cond('IPPolicy', 'shared', 'Stalled')).toMatchObject({ reason: 'AccountNotAllowed' });
    expect(requestsTo(w.emu) + requestsTo(emuB)).toBe(0);
  });

  it('an account not Ready holds its objects back (WaitingForAccount); once Ready they converge', async () => {
    await twoAccounts();
    registry.mark(B, false, { state: 'stalled', reason: 'KeyRefused', message: 'the API refused the key' });
    w.apply('IPPolicy', 'p', B_REF);
    const out = await w.reconcile('IPPolicy', 'p');
    // a new object says so only after a quiet wait: the account usually turns Ready within seconds
    expect(out.requeueAfterMs).toBeGreaterThan(0);
    expect(requestsTo(emuB)).toBe(0);
    registry.mark(B, true);
    await w.converge();
    expect(w.ready('IPPolicy', 'p')?.status).toBe('True');
  });

  it('a rotated key is used from the next request, on the same budget; the resource is not re-created', async () => {
    await twoAccounts();
    w.apply('IPPolicy', 'p', { ...B_REF, description: 'one' });
    await w.converge();
    const id = status('IPPolicy', 'p').id;
    const budget = registry.get(B)!.budget;
    expect(registry.set(B, { url: emuB.url, key: 'not-the-key', perMinute: 600 })).toBe('rotated');
    expect(registry.get(B)!.budget).toBe(budget);
    w.apply('IPPolicy', 'p', { description: 'two' });
    await w.reconcile('IPPolicy', 'p');
    expect(cond('IPPolicy', 'p', 'Stalled')).toMatchObject({ reason: 'APIUnauthorized' });
    expect(JSON.stringify(w.get('IPPolicy', 'p'))).not.toContain('not-the-key');
    expect(registry.set(B, { url: emuB.url, key: emuB.apiKey, perMinute: 600 })).toBe('rotated');
    w.apply('IPPolicy', 'p', { description: 'three' });
    await w.converge();
    expect(w.ready('IPPolicy', 'p')?.status).toBe('True');
    expect(status('IPPolicy', 'p').id).toBe(id);
    expect(await policiesIn(emuB.url, emuB.apiKey)).toEqual([id]);
    // a new budget is a new budget; the same key and budget change nothing
    expect(registry.set(B, { url: emuB.url, key: emuB.apiKey, perMinute: 600 })).toBe('same');
    registry.set(B, { url: emuB.url, key: emuB.apiKey, perMinute: 60 });
    expect(registry.get(B)!.budget).not.toBe(budget);
  });

  it('a key the API refuses after it was accepted (revoked) is told once, for the account to be checked again', async () => {
    await twoAccounts();
    const told: string[] = [];
    registry.onRefused = (id) => told.push(id);
    // taken as usable, then revoked: the API refuses it now
    registry.set(B, { url: emuB.url, key: 'revoked-key', perMinute: 600 });
    registry.mark(B, true);
    w.apply('IPPolicy', 'p', B_REF);
    w.apply('IPPolicy', 'q', B_REF);
    await w.reconcile('IPPolicy', 'p');
    await w.reconcile('IPPolicy', 'q');
    expect(cond('IPPolicy', 'p', 'Stalled')).toMatchObject({ reason: 'APIUnauthorized' });
    expect(told).toEqual([B]);
    expect(registry.get(B)!.suspect).toBe(true);
    // checked again (refused): told again only after the next check found it usable
    registry.mark(B, false, { state: 'stalled', reason: 'KeyRefused', message: 'the API refused the key' });
    expect(registry.get(B)!.suspect).toBe(false);
  });

  it('a resource held in one account is never looked for in another: AccountChanged, no request', async () => {
    const edge = ['b'];
    await twoAccounts({ edge });
    w.apply('IPPolicy', 'p', {});
    await w.converge();
    // an EdgeAccount named default appears in the namespace: the object would now resolve to it
    edge.push('default');
    registry.set(`EdgeAccount/${NS}/default`, { url: emuB.url, key: emuB.apiKey, perMinute: 600 });
    registry.mark(`EdgeAccount/${NS}/default`, true);
    const before = requestsTo(emuB);
    w.apply('IPPolicy', 'p', { description: 'changed' });
    await w.reconcile('IPPolicy', 'p');
    expect(cond('IPPolicy', 'p', 'Stalled')).toMatchObject({ reason: 'AccountChanged' });
    expect(requestsTo(emuB)).toBe(before);
    // the delete still goes to the account holding it
    w.kube.delete('ippolicies', NS, 'p');
    await w.reconcile('IPPolicy', 'p');
    expect(await policiesIn(w.emu.url, w.emu.apiKey)).toEqual([]);
  });
});
