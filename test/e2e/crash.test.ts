// The operator dies after the API created a resource but before the id was recorded:
// the restart finds that resource by its owner marker. No duplicate, no orphan.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collect } from '../../src/api/client.ts';
import { CREATE_PENDING_ANNOTATION } from '../../src/operator/kinds/crd-schema.ts';
import { decodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { obj, ready, res, skipReason, startOperator, type World, waitFor, world } from './harness.ts';

let w: World;
beforeAll(async () => {
  if (!skipReason) w = await world('crash');
});
afterAll(async () => {
  await w?.close();
});

it.skipIf(!!skipReason)('recovers a create whose answer was lost when the operator was killed', async () => {
  const P = res('ippolicies');
  const R = res('ippolicyrules');
  // no leader election: a SIGKILLed leader's Lease would make the next start wait for it to expire
  let op = await startOperator(w.emu, w.ns, ['--leader-elect', 'false']);
  await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, 'base', {}));
  await waitFor('policy Ready', async () => ready(await w.kube.get(P, w.ns, 'base')));

  // the API acts on the create, but the connection drops before the answer arrives; the
  // lookups that would recover in-process fail too, so only a restart can recover
  w.emu.faults.set({ dropRate: 1, methods: ['POST', 'GET'], pathPattern: '^/ip_policy_rules' });
  await w.kube.create(
    R,
    w.ns,
    obj('IPPolicyRule', w.ns, 'crashy', {
      ipPolicyRef: { name: 'base' },
      cidr: '10.1.0.0/16',
      action: 'allow',
    }),
  );
  await waitFor('rule created on the API', () => w.emu.store.all('ipPolicyRules').length >= 1);
  await op.kill('SIGKILL');
  w.emu.faults.set({});

  const stuck = await w.kube.get(R, w.ns, 'crashy');
  expect(stuck.status?.id).toBeUndefined();
  expect(stuck.metadata.annotations?.[CREATE_PENDING_ANNOTATION]).toBeTruthy();

  op = await startOperator(w.emu, w.ns, ['--leader-elect', 'false']);
  const done = await waitFor('rule Ready after restart', async () => {
    const o = await w.kube.get(R, w.ns, 'crashy');
    return ready(o) ? o : undefined;
  });
  const rules = await collect(w.api.ipPolicyRules.list());
  expect(rules).toHaveLength(1);
  expect(done.status?.id).toBe(rules[0]!.id);
  expect(decodeMetadata(rules[0]!.metadata).owner?.uid).toBe(done.metadata.uid);
  expect(done.metadata.annotations?.[CREATE_PENDING_ANNOTATION]).toBeUndefined();
  await op.kill();
});
