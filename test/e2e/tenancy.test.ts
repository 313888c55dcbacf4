// A namespace is a tenant: a team member with write access to one namespace only tries to
// take, change or delete what another namespace manages (adoption by id annotation, a raw-id
// reference into it, removing finalizers, deleting). Nothing of the other namespace changes,
// in the cluster or in the account, and the attacker's objects say why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect } from '../../src/api/client.ts';
import { FINALIZER, ID_ANNOTATION } from '../../src/operator/kinds/crd-schema.ts';
import { decodeMetadata, encodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { sshPublicKey } from '../integration/harness.ts';
import {
  condition,
  NAMESPACES,
  type OperatorProcess,
  obj,
  ready,
  res,
  skipReason,
  startOperator,
  type World,
  waitFor,
  world,
} from './harness.ts';

const P = res('ippolicies');
const R = res('ippolicyrules');
const S = res('sshcredentials');
const EVENTS = { group: '', version: 'v1', plural: 'events' };

describe.skipIf(!!skipReason)('tenancy: one namespace cannot reach another', () => {
  let w: World;
  let op: OperatorProcess;
  const victim = `${Date.now().toString(36)}-victim`;
  const attacker = `${Date.now().toString(36)}-rt4`;
  const ids: Record<string, string> = {};
  let before: unknown;

  const get = (r: typeof P, ns: string, name: string) => w.kube.get(r, ns, name).catch(() => undefined);
  const stalled = (r: typeof P, ns: string, name: string) =>
    waitFor(`${ns}/${name} Stalled`, async () => {
      const o = await get(r, ns, name);
      return condition(o, 'Stalled')?.status === 'True' ? o : undefined;
    });
  /** What the victim has, in the account and in the cluster. */
  const victimState = async () => ({
    policy: await w.api.ipPolicies.get(ids.policy!),
    rules: (await collect(w.api.ipPolicyRules.list())).filter((r) => r.ip_policy.id === ids.policy),
    ssh: await w.api.sshCredentials.get(ids.ssh!),
    objects: await Promise.all(
      [
        [P, 'corp'],
        [R, 'office'],
        [S, 'deploy'],
      ].map(async ([r, n]) => {
        const o = (await get(r as typeof P, victim, n as string))!;
        return {
          name: n,
          ready: ready(o),
          id: (o.status as { id: string }).id,
          finalizers: o.metadata.finalizers,
        };
      }),
    ),
  });

  beforeAll(async () => {
    w = await world('tenancy');
    for (const name of [victim, attacker]) await w.kube.create(NAMESPACES, undefined, { metadata: { name } });
    // the victim's namespace may adopt what was made outside the cluster (the attacker's may not)
    op = await startOperator(w.emu, w.ns, ['--namespaces', `${victim},${attacker}`, '--adopt-from', victim]);
    await w.kube.create(P, victim, obj('IPPolicy', victim, 'corp', { description: 'office network' }));
    await w.kube.create(
      R,
      victim,
      obj('IPPolicyRule', victim, 'office', {
        ipPolicyRef: { name: 'corp' },
        cidr: '192.0.2.0/24',
        action: 'allow',
      }),
    );
    await w.kube.create(
      S,
      victim,
      obj('SSHCredential', victim, 'deploy', {
        publicKey: sshPublicKey('deploy@ci'),
        acl: ['bind:app.example.com'],
      }),
    );
    for (const [r, n, k] of [
      [P, 'corp', 'policy'],
      [R, 'office', 'rule'],
      [S, 'deploy', 'ssh'],
    ] as const) {
      const o = await waitFor(`${n} Ready`, async () => {
        const x = await get(r, victim, n);
        return ready(x) ? x : undefined;
      });
      ids[k] = (o.status as { id: string }).id;
    }
    before = await victimState();
  });
  afterAll(async () => {
    await op?.kill();
    for (const name of [victim, attacker]) await w?.kube.delete(NAMESPACES, undefined, name).catch(() => {});
    await w?.close();
  });

  it('adoption of another namespace’s resource by id annotation is refused: Stalled/OwnedElsewhere, without naming it', async () => {
    await w.kube.create(
      S,
      attacker,
      obj(
        'SSHCredential',
        attacker,
        'steal-ssh',
        { publicKey: sshPublicKey('x@y'), acl: ['*'] },
        { [ID_ANNOTATION]: ids.ssh! },
      ),
    );
    await w.kube.create(
      P,
      attacker,
      obj(
        'IPPolicy',
        attacker,
        'steal',
        { description: 'hijacked by rt4' },
        { [ID_ANNOTATION]: ids.policy! },
      ),
    );
    for (const [r, n, id] of [
      [S, 'steal-ssh', ids.ssh],
      [P, 'steal', ids.policy],
    ] as const) {
      const o = await stalled(r, attacker, n);
      const c = condition(o, 'Stalled')!;
      expect(c.reason).toBe('OwnedElsewhere');
      expect(c.message).toBe(`${id} is managed by an object in another namespace; not taking it over`);
      expect(c.message).not.toContain(victim);
      expect((o.status as { id?: string }).id).toBeUndefined();
    }
    expect(await victimState()).toEqual(before);
  });

  it('a resource another namespace adopted without a write (no owner marker) is refused too, and survives the attacker’s delete', async () => {
    const made = await w.api.ipPolicies.create({ description: 'made outside the cluster' });
    await w.kube.create(
      P,
      victim,
      obj(
        'IPPolicy',
        victim,
        'outside',
        { description: 'made outside the cluster' },
        { [ID_ANNOTATION]: made.id },
      ),
    );
    await waitFor('outside Ready', async () => ready(await get(P, victim, 'outside')) || undefined);
    const unmarked = async () => {
      const r = await w.api.ipPolicies.get(made.id);
      return { description: r.description, owner: decodeMetadata(r.metadata).owner };
    };
    // the precondition: adopting an equal resource wrote nothing, so no marker says whose it is
    expect(await unmarked()).toEqual({ description: 'made outside the cluster', owner: undefined });
    await w.kube.create(
      P,
      attacker,
      obj(
        'IPPolicy',
        attacker,
        'steal-unmarked',
        { description: 'hijacked by rt4' },
        { [ID_ANNOTATION]: made.id },
      ),
    );
    const o = await stalled(P, attacker, 'steal-unmarked');
    expect(condition(o, 'Stalled')).toMatchObject({
      reason: 'OwnedElsewhere',
      message: `${made.id} is managed by an object in another namespace; not taking it over`,
    });
    await w.kube.delete(P, attacker, 'steal-unmarked');
    await waitFor(
      'steal-unmarked gone',
      async () => !(await get(P, attacker, 'steal-unmarked')) || undefined,
    );
    expect(await unmarked()).toEqual({ description: 'made outside the cluster', owner: undefined });
    expect(ready(await get(P, victim, 'outside'))).toBe(true);
  });

  it('an owner marker written by hand does not tell whether a name exists in another namespace', async () => {
    const real = decodeMetadata((await w.api.ipPolicies.get(ids.policy!)).metadata).owner!;
    // the attacker's own resources, marked as if an object of the victim's namespace made them:
    // one naming an object that exists there, one naming an object that does not
    const forged = async (name: string) =>
      (
        await w.api.ipPolicies.create({
          description: 'forged',
          metadata: encodeMetadata(
            {
              cluster: real.cluster,
              uid: '00000000-0000-4000-8000-000000000000',
              object: `IPPolicy/${victim}/${name}`,
            },
            '',
          ),
        })
      ).id;
    const probes = { exists: await forged('corp'), missing: await forged('no-such-policy') };
    for (const [name, id] of Object.entries(probes))
      await w.kube.create(
        P,
        attacker,
        obj('IPPolicy', attacker, `probe-${name}`, { description: 'forged' }, { [ID_ANNOTATION]: id }),
      );
    // both answer alike: made by no object of the attacker's namespace, neither is taken (the
    // attacker's namespace may not adopt), whether the name its marker gives exists or not
    const said: string[] = [];
    for (const [name, id] of Object.entries(probes)) {
      const o = await stalled(P, attacker, `probe-${name}`);
      expect(condition(o, 'Stalled')?.reason).toBe('AdoptionNotAllowed');
      said.push(condition(o, 'Stalled')!.message.replace(id, '<id>'));
      expect((o.status as { id?: string }).id).toBeUndefined();
    }
    expect(said[0]).toBe(said[1]);
    for (const name of Object.keys(probes)) await w.kube.delete(P, attacker, `probe-${name}`);
    expect(await victimState()).toEqual(before);
  });

  it('a raw-id reference into another namespace’s resource is refused: Stalled/ReferenceNotAllowed, no rule added', async () => {
    await w.kube.create(
      R,
      attacker,
      obj('IPPolicyRule', attacker, 'open', { ipPolicyID: ids.policy!, cidr: '0.0.0.0/0', action: 'allow' }),
    );
    const o = await stalled(R, attacker, 'open');
    expect(condition(o, 'Stalled')).toMatchObject({
      reason: 'ReferenceNotAllowed',
      message: expect.stringContaining(
        `spec.ipPolicyID: ${ids.policy} is managed by an object in another namespace`,
      ),
    });
    expect(await victimState()).toEqual(before);
  });

  it('a finalizer removed from a live object is put back at once; the delete then removes the remote resource', async () => {
    await w.kube.create(P, attacker, obj('IPPolicy', attacker, 'mine', {}));
    const mine = await waitFor('mine Ready', async () => {
      const x = await get(P, attacker, 'mine');
      return ready(x) ? x : undefined;
    });
    const id = (mine.status as { id: string }).id;
    const t0 = Date.now();
    await w.kube.patch(P, attacker, 'mine', { metadata: { finalizers: null } });
    await waitFor(
      'finalizer put back',
      async () => (await get(P, attacker, 'mine'))?.metadata.finalizers?.includes(FINALIZER),
      5000,
      50,
    );
    expect(Date.now() - t0).toBeLessThan(5000);
    // Events go out one at a time, behind the object's writes
    await waitFor('a FinalizerRestored Event', async () =>
      (await w.kube.list(EVENTS, attacker)).items.some(
        (e) =>
          (e as unknown as { reason: string; involvedObject: { name: string } }).reason ===
            'FinalizerRestored' &&
          (e as unknown as { involvedObject: { name: string } }).involvedObject.name === 'mine',
      ),
    );
    await w.kube.delete(P, attacker, 'mine');
    await waitFor('mine gone', async () => !(await get(P, attacker, 'mine')));
    await expect(w.api.ipPolicies.get(id)).rejects.toMatchObject({ status: 404 });
  });

  it('a status.id written through the status subresource deletes nothing of another namespace: the delete takes only its own resource', async () => {
    await w.kube.create(P, attacker, obj('IPPolicy', attacker, 'decoy', {}));
    const decoy = await waitFor('decoy Ready', async () => {
      const x = await get(P, attacker, 'decoy');
      return ready(x) ? x : undefined;
    });
    const ownId = (decoy.status as { id: string }).id;
    // what a tenant with a wildcard role on edge.tunnel.dev may do
    await w.kube.patch(P, attacker, 'decoy', { status: { id: ids.policy } }, 'merge', 'status');
    const o = await stalled(P, attacker, 'decoy');
    expect(condition(o, 'Stalled')).toMatchObject({
      reason: 'OwnedElsewhere',
      message: `${ids.policy} is managed by an object in another namespace; not taking it over`,
    });
    await w.kube.delete(P, attacker, 'decoy');
    await waitFor('decoy gone', async () => !(await get(P, attacker, 'decoy')));
    // the other namespace's policy is still there (GET 200) and its object Ready
    await expect(w.api.ipPolicies.get(ids.policy!)).resolves.toMatchObject({ id: ids.policy });
    expect(await victimState()).toEqual(before);
    // the decoy's own resource, found by its owner marker, went with it
    await expect(w.api.ipPolicies.get(ownId)).rejects.toMatchObject({ status: 404 });
    // Events go out one at a time, behind the object's writes
    const event = await waitFor('an OwnedElsewhere Event', async () =>
      (
        (await w.kube.list(EVENTS, attacker)).items as unknown as {
          reason: string;
          type: string;
          message: string;
          involvedObject: { name: string };
        }[]
      ).find(
        (e) =>
          e.involvedObject.name === 'decoy' &&
          e.reason === 'OwnedElsewhere' &&
          e.message.includes('not deleting'),
      ),
    );
    expect(event).toMatchObject({
      type: 'Warning',
      message: `${ids.policy} is managed by an object in another namespace; not deleting it`,
    });
    // the id still counts as the other namespace's: a raw-id reference to it is refused
    await w.kube.create(
      R,
      attacker,
      obj('IPPolicyRule', attacker, 'after-decoy', {
        ipPolicyID: ids.policy!,
        cidr: '0.0.0.0/0',
        action: 'allow',
      }),
    );
    expect(condition(await stalled(R, attacker, 'after-decoy'), 'Stalled')?.reason).toBe(
      'ReferenceNotAllowed',
    );
    await w.kube.delete(R, attacker, 'after-decoy');
  });

  it('deleting the attacker’s objects (finalizers removed first, or not) leaves the other namespace as it was', async () => {
    await w.kube.patch(S, attacker, 'steal-ssh', { metadata: { finalizers: null } });
    for (const [r, n] of [
      [S, 'steal-ssh'],
      [P, 'steal'],
      [R, 'open'],
    ] as const)
      await w.kube.delete(r, attacker, n).catch(() => {});
    await waitFor('attacker objects gone', async () => {
      const left = await Promise.all([
        get(S, attacker, 'steal-ssh'),
        get(P, attacker, 'steal'),
        get(R, attacker, 'open'),
      ]);
      return left.every((x) => !x);
    });
    await new Promise((r) => setTimeout(r, 1000));
    expect(await victimState()).toEqual(before);
  });
});
