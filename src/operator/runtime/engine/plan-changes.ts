// Pure: what differs between what an object wants and what the API holds, field by field and
// module by module; the patch and the module steps that put it right.
import { isDeepStrictEqual } from 'node:util';
import type { AnyBinding, Common } from '../bindings/binding.ts';
import {
  covers,
  earlierDigestMatches,
  outputToInput,
  secretDigest,
  withoutSecrets,
} from '../bindings/module-compare.ts';
import { decodeMetadata } from '../bindings/owner.ts';
import type { KubeObject } from '../kube/kube.ts';
import type { Remote, Status, Wanted } from './types.ts';

/** A decision not to go on, with the condition's reason and message. */
export type Stall = { action: 'stall'; reason: string; message: string; requeueAfterMs?: number };

export const stallWith = (reason: string, message: string): Stall => ({ action: 'stall', reason, message });

export type UpdatePlan = Stall | { action: 'update'; patch: Record<string, unknown> };

/** What differs and can be changed in place (the patch), or a stall naming what cannot. */
export function planUpdate(
  binding: AnyBinding,
  remote: Remote,
  desired: Record<string, unknown>,
  common: Common,
): UpdatePlan {
  const projected = binding.fromRemote(remote);
  const changed = Object.keys(desired).filter((k) => !isDeepStrictEqual(desired[k], projected[k]));
  const fixed = changed.filter((k) => !(binding.updatable as string[]).includes(k));
  if (fixed.length)
    return stallWith(
      'ImmutableFieldDiffers',
      `${fixed.join(', ')} of ${remote.id} differ from the spec and cannot be changed in place: delete and recreate this object`,
    );
  const patch: Record<string, unknown> = Object.fromEntries(changed.map((k) => [k, desired[k]]));
  if ((remote.description ?? '') !== common.description) patch.description = common.description;
  // An adopted resource without an owner marker gets one with its first write, not a write
  // of its own: adopting what already equals the spec costs no API call (edgectl export).
  const held = decodeMetadata(remote.metadata);
  const metadataDiffers = held.owner
    ? remote.metadata !== common.metadata
    : held.user !== decodeMetadata(common.metadata).user;
  if (metadataDiffers || (Object.keys(patch).length > 0 && remote.metadata !== common.metadata))
    patch.metadata = common.metadata;
  return { action: 'update', patch };
}

/** The Event an update records: a correction when the spec did not change (drift), else an update. */
export function updateEvent(obj: KubeObject, id: string, patch: Record<string, unknown>) {
  const drift = (obj.status as Status | undefined)?.observedGeneration === obj.metadata.generation;
  return {
    reason: drift ? 'DriftCorrected' : 'Updated',
    message: `${drift ? 'put back out-of-band change to' : 'updated'} ${Object.keys(patch).join(', ')} of ${id}`,
  };
}

/** One module change, in the binding's order: a PUT of its body or a DELETE. */
export type ModuleStep = { name: string; put: Record<string, unknown> } | { name: string; delete: true };

const NO_DIGESTS: Record<string, string> = Object.freeze({});

/** The secret digests of the modules a spec wants (status.secretDigests). */
export function digestsOf(
  binding: AnyBinding,
  modules: Wanted['modules'],
  digestKey: string,
  namespace: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of binding.modules ?? []) {
    const body = modules.get(m.name);
    const d = body ? secretDigest(body, m.secretPaths, digestKey, namespace) : undefined;
    if (d) out[m.name] = d;
  }
  // most objects have no secret: one empty record for all their memos
  return Object.keys(out).length ? out : NO_DIGESTS;
}

/** What an object's secret digests are scoped by (its namespace) and, in their oldest form, keyed by (its uid). */
export const ownerOfDigests = (obj: KubeObject) => ({
  namespace: obj.metadata.namespace ?? '',
  uid: obj.metadata.uid,
});

/**
 * PUTs for the modules that differ, DELETEs for the ones the spec dropped. Secrets compare by
 * digest: the applied one (`applied`, perhaps in an earlier version's form), or with no digest
 * yet (an adoption) the API's own copy, which it returns.
 */
export function planModules(
  binding: AnyBinding,
  remote: Remote,
  modules: Wanted['modules'],
  applied: Record<string, string> | undefined,
  digestKey: string,
  obj: { namespace: string; uid?: string },
): ModuleStep[] {
  const steps: ModuleStep[] = [];
  for (const m of binding.modules ?? []) {
    const want = modules.get(m.name) ?? null;
    const have = (remote[m.name] as Record<string, unknown> | null | undefined) ?? null;
    if (!want) {
      if (have) steps.push({ name: m.name, delete: true });
      continue;
    }
    const digest = secretDigest(want, m.secretPaths, digestKey, obj.namespace);
    const was = applied?.[m.name];
    const sameSecrets =
      digest === was ||
      (was !== undefined && earlierDigestMatches(was, want, m.secretPaths, digestKey, obj.uid)) ||
      (was === undefined &&
        have !== null &&
        digest === secretDigest(outputToInput(have), m.secretPaths, digestKey, obj.namespace));
    const same =
      have &&
      covers(withoutSecrets(want, m.secretPaths), withoutSecrets(outputToInput(have), m.secretPaths)) &&
      sameSecrets;
    if (!same) steps.push({ name: m.name, put: want });
  }
  return steps;
}

/** The Event's list of module changes: `name` for a PUT, `-name` for a DELETE. */
export const moduleChanges = (steps: ModuleStep[]) =>
  steps.map((s) => ('delete' in s ? `-${s.name}` : s.name));

/** The Event of module steps written to `id`, if any. */
export const modulesEvent = (id: string, steps: ModuleStep[]) =>
  steps.length
    ? { reason: 'ModulesUpdated', message: `applied modules of ${id}: ${moduleChanges(steps).join(', ')}` }
    : undefined;

/**
 * A sync decision's second step, between the update and the module writes: with
 * `next: 'plan-modules'` the module steps planned again on the resource as the update
 * returned it (the same as read, unless someone changed them in between), else the steps
 * planned on the resource as read; with their Event.
 */
export function planModuleStep(i: {
  decision: { modules: ModuleStep[]; next?: 'plan-modules' };
  binding: AnyBinding;
  updated: Remote;
  want: Wanted;
  applied: Record<string, string> | undefined;
  digestKey: string;
  obj: KubeObject;
}): { steps: ModuleStep[]; event?: { reason: string; message: string } } {
  const steps =
    i.decision.next === 'plan-modules'
      ? planModules(i.binding, i.updated, i.want.modules, i.applied, i.digestKey, ownerOfDigests(i.obj))
      : i.decision.modules;
  const event = modulesEvent(i.updated.id, steps);
  return { steps, ...(event ? { event } : {}) };
}
/** The fields (wire names) and modules in which a remote resource differs from what the spec asks. */
export function driftOf(binding: AnyBinding, remote: Remote, want: Wanted): string[] {
  const projected = binding.fromRemote(remote);
  const out = Object.keys(want.desired).filter((k) => !isDeepStrictEqual(want.desired[k], projected[k]));
  if ((remote.description ?? '') !== want.common.description) out.push('description');
  if (decodeMetadata(remote.metadata).user !== decodeMetadata(want.common.metadata).user)
    out.push('metadata');
  for (const m of binding.modules ?? []) {
    const w = want.modules.get(m.name) ?? null;
    const h = (remote[m.name] as Record<string, unknown> | null | undefined) ?? null;
    if (
      (!w && h) ||
      (w &&
        (!h || !covers(withoutSecrets(w, m.secretPaths), withoutSecrets(outputToInput(h), m.secretPaths))))
    )
      out.push(m.name);
  }
  return out;
}
