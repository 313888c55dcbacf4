// What an object wants: references resolved to ids (duplicates and cycles stall), Secrets
// read, raw ids and the id named for adoption checked against other namespaces, the modules
// built; or why it cannot say yet (a Failure, a value like every other outcome).
import { isReachableId } from '../../../api/limits.ts';
import { describeAccount } from '../accounts/resolve.ts';
import type { Common } from '../bindings/binding.ts';
import { encodeMetadata } from '../bindings/owner.ts';
import { ID_ANNOTATION } from '../constants.ts';
import type { KubeObject } from '../kube/kube.ts';
import {
  type Failure,
  failure,
  isFailure,
  QUIET_WAIT_FOR_PROGRESS_MS,
  QUIET_WAIT_MS,
  stalled,
} from './failure.ts';
import { adoptionMessage, isObserveOnly, ownerOf } from './plan.ts';
import type { EngineContext, Status, Wanted } from './types.ts';

const METADATA_MAX = 4096;

/**
 * The values of a spec's `...ID`/`...IDs` fields (`ipPolicyID`, `backendID`, `ipPolicyIDs`):
 * resources made outside the cluster, or so the user says. Whether one is another namespace's
 * is the cache's to say (its id index); the runtime knows no kind's id prefix, and a value that
 * is no managed resource's id (an OAuth `clientID`) is simply not found there.
 */
export function rawIds(value: unknown, path: string): { path: string; id: string }[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => rawIds(v, `${path}[${i}]`));
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => {
    if (/IDs?$/.test(k)) {
      const ids = typeof v === 'string' ? [v] : Array.isArray(v) ? v : [];
      return ids.flatMap((x, i) =>
        typeof x === 'string' && x
          ? [{ path: `${path}.${k}${Array.isArray(v) ? `[${i}]` : ''}`, id: x }]
          : [],
      );
    }
    return rawIds(v, `${path}.${k}`);
  });
}

/** The ids an object names itself (its spec's raw ids, its id annotation, its status), and `more`. */
export function idsNamedBy(obj: KubeObject, ...more: string[]): Set<string> {
  const ids = new Set(more);
  for (const { id } of rawIds(obj.spec ?? {}, 'spec')) ids.add(id);
  const named = obj.metadata.annotations?.[ID_ANNOTATION];
  if (named) ids.add(named);
  const own = (obj.status as Status | undefined)?.id;
  if (own) ids.add(own);
  return ids;
}

/**
 * Ids written into the spec (`ipPolicyID`, `backendID`: resources made elsewhere) must not be
 * another namespace's resources: a namespace is a tenant.
 */
function checkRawIds(ctx: EngineContext, obj: KubeObject): Failure | undefined {
  const { cache } = ctx.opts;
  for (const { path, id } of rawIds(obj.spec ?? {}, 'spec')) {
    if (cache.managedElsewhere(id, obj.metadata.namespace!))
      return stalled(
        'ReferenceNotAllowed',
        `${path}: ${id} is managed by an object in another namespace; a namespace may reference by id only resources made outside the cluster or shared with it (--shared-namespaces)`,
      );
    // an id another account's object holds is unknown to this account's key (it would answer 404)
    const holder = cache.managerOf(id);
    // a holder known only from its status (writable by a status writer) proves nothing yet
    if (holder && cache.confirmedId && cache.confirmedId(holder.kind, holder.namespace, holder.name) !== id)
      return unconfirmed(`${path}: ${id} (${holder.kind} ${holder.name})`);
    // one no object here holds: made outside the cluster (or by another installation)
    if (!holder && ctx.mayAdopt === false && isReachableId(id))
      return stalled('AdoptionNotAllowed', adoptionMessage(`${path}: ${id} is no object's of this cluster`));
    const target = holder && cache.lookup(holder.kind, holder.namespace, holder.name);
    const crossed = target && sameAccount(ctx, target, `${path}: ${id} (${holder.kind} ${holder.name})`);
    if (crossed) return crossed;
  }
  return undefined;
}

/**
 * The id annotation names a resource to adopt (or, with managementPolicy Observe, to read):
 * not one an object of another namespace manages, even in a shared account. Adopting rewrites
 * the resource to this object's spec and deletes it with this object. A resource adopted
 * without a write, or only observed, carries no owner marker to refuse it (plan.ts
 * `ownership`): the caches know who holds it. An id already in this object's status is its own.
 */
function checkAdoptedId(ctx: EngineContext, obj: KubeObject): Failure | undefined {
  const named = obj.metadata.annotations?.[ID_ANNOTATION];
  const own = (obj.status as Status | undefined)?.id;
  // the annotation's id is the one worked on as readId and observeOnlyId take it: observe-only
  // reads it; a sync adopts it only while status holds none (then status decides)
  const id = isObserveOnly(obj) || !own ? named : undefined;
  if (!id || own === id) return undefined;
  const holder = ctx.opts.cache.managerOf(id);
  if (!holder || holder.namespace === obj.metadata.namespace) return undefined;
  // as plan.ts says it of a marked resource: the same words whichever way it is known
  return stalled('OwnedElsewhere', `${id} is managed by an object in another namespace; not taking it over`);
}

/** How soon a reference to an object not synced here yet (after a start) is looked at again. */
const UNCONFIRMED_RECHECK_MS = 2000;

/** A reference whose id no sync here has checked yet: wait for it. */
const unconfirmed = (what: string): Failure =>
  failure(
    {
      state: 'progressing',
      reason: 'WaitingForReference',
      message: `waiting for ${what} to be in sync: its id is used once the operator has checked it`,
    },
    { requeueAfterMs: UNCONFIRMED_RECHECK_MS },
    // after a start every reference waits so for its target's first sync: no condition moves
    QUIET_WAIT_FOR_PROGRESS_MS,
    true,
  );

/** A reference never crosses accounts: a route of account A never points at a backend of account B. */
function sameAccount(ctx: EngineContext, target: KubeObject, what: string): Failure | undefined {
  const accounts = ctx.opts.accounts;
  if (!accounts || !ctx.account) return undefined;
  const theirs = accounts.accountOf(target);
  if (theirs.ok && theirs.id !== ctx.account)
    return stalled(
      'AccountMismatch',
      `${what} is in ${describeAccount(theirs.id)}, this object in ${describeAccount(ctx.account)}: a reference never crosses accounts`,
    );
  return undefined;
}

/**
 * A path of references from the referenced object back to `obj`, or undefined. Only
 * asked while waiting for a reference, so a cycle stalls with its members named instead
 * of waiting forever.
 */
function cycleThrough(
  ctx: EngineContext,
  obj: KubeObject,
  first: { kind: string; name: string },
): string[] | undefined {
  const ns = obj.metadata.namespace!;
  const self = `${ctx.binding.kind}/${obj.metadata.name}`;
  const visited = new Set<string>();
  const walk = (node: { kind: string; name: string }, path: string[]): string[] | undefined => {
    const id = `${node.kind}/${node.name}`;
    if (id === self) return [...path, `${node.kind} ${node.name}`];
    if (visited.has(id)) return undefined;
    visited.add(id);
    const target = ctx.opts.cache.lookup(node.kind, ns, node.name);
    if (!target) return undefined;
    for (const next of ctx.opts.cache.referencesOf(node.kind, target.spec ?? {}) ?? []) {
      const found = walk(next, [...path, `${node.kind} ${node.name}`]);
      if (found) return found;
    }
    return undefined;
  };
  return walk(first, [`${ctx.binding.kind} ${obj.metadata.name}`]);
}

type Spec = Record<string, unknown> & { description?: string; metadata?: string };

/** Each referenced object's id, by `Kind/name`; a duplicate or a cycle stalls, a missing id waits. */
function resolveReferences(ctx: EngineContext, obj: KubeObject, spec: Spec): Map<string, string> | Failure {
  const ids = new Map<string, string>();
  const references = ctx.binding.references?.(spec) ?? [];
  const seen = new Map<string, string>();
  for (const r of references) {
    const first = seen.get(`${r.kind}/${r.name}`);
    if (first)
      return stalled(
        'DuplicateReference',
        `${r.path} and ${first} both reference ${r.kind} ${r.name}: list each once`,
      );
    seen.set(`${r.kind}/${r.name}`, r.path);
  }
  for (const r of references) {
    const target = ctx.opts.cache.lookup(r.kind, obj.metadata.namespace!, r.name);
    const crossed = target && sameAccount(ctx, target, `${r.path}: ${r.kind} ${r.name}`);
    if (crossed) return crossed;
    const id = (target?.status as Status | undefined)?.id;
    // an id in status that no sync here took as the object's own is not used (a status writer
    // could point it at a resource of the account nobody here made): wait for that sync
    const cache = ctx.opts.cache;
    if (id && cache.confirmedId && cache.confirmedId(r.kind, obj.metadata.namespace!, r.name) !== id)
      return unconfirmed(`${r.path}: ${r.kind} ${r.name}`);
    // a referenced object being deleted keeps its remote resource while this one uses it
    // (it waits as InUse), so its id still serves
    if (!id) {
      const cycle = cycleThrough(ctx, obj, r);
      if (cycle)
        return stalled(
          'ReferenceCycle',
          `references form a cycle: ${cycle.join(' -> ')}; break it to continue`,
        );
      const targetStalled = (target?.status as Status | undefined)?.conditions?.some(
        (c) => c.type === 'Stalled' && c.status === 'True',
      );
      return failure(
        {
          state: 'progressing',
          reason: 'WaitingForReference',
          message: `waiting for ${r.kind} ${r.name} (${r.path}) to have an id`,
        },
        {},
        target && !targetStalled ? QUIET_WAIT_FOR_PROGRESS_MS : QUIET_WAIT_MS,
      );
    }
    ids.set(`${r.kind}/${r.name}`, id);
  }
  return ids;
}

/** Each referenced Secret key's value, by `name/key`; a missing Secret or key waits. */
async function readSecrets(
  ctx: EngineContext,
  obj: KubeObject,
  spec: Spec,
): Promise<Map<string, string> | Failure> {
  const secrets = new Map<string, string>();
  for (const s of ctx.binding.secrets?.(spec) ?? []) {
    const data = await ctx.opts.secrets.value(obj.metadata.namespace!, s.name, s.key);
    if (data == null) {
      return failure(
        {
          state: 'progressing',
          reason: 'WaitingForSecret',
          message:
            data === undefined
              ? `Secret ${s.name} has no key ${s.key} (${s.path})`
              : `Secret ${s.name} not found (${s.path})`,
        },
        {},
      );
    }
    secrets.set(`${s.name}/${s.key}`, Buffer.from(data, 'base64').toString('utf8'));
  }
  return secrets;
}

/** What the object asks the API for: references resolved, Secrets read, modules built. */
export async function wanted(ctx: EngineContext, obj: KubeObject): Promise<Wanted | Failure> {
  const refused = checkRawIds(ctx, obj) ?? checkAdoptedId(ctx, obj);
  if (refused) return refused;
  const spec = (obj.spec ?? {}) as Spec;
  const ids = resolveReferences(ctx, obj, spec);
  if (isFailure(ids)) return ids;
  const ref = (kind: string, name: string) => ids.get(`${kind}/${name}`)!;
  const secrets = await readSecrets(ctx, obj, spec);
  if (isFailure(secrets)) return secrets;
  const secret = (name: string, key: string) => secrets.get(`${name}/${key}`)!;
  const common: Common = {
    description: spec.description ?? '',
    metadata: encodeMetadata(ownerOf(ctx.binding.kind, obj, ctx.opts.clusterId), spec.metadata ?? ''),
  };
  if (Buffer.byteLength(common.metadata) > METADATA_MAX)
    return stalled(
      'MetadataTooLong',
      `spec.metadata with the owner marker exceeds the API's ${METADATA_MAX} bytes`,
    );
  return {
    desired: ctx.binding.desired(spec, ref),
    modules: new Map((ctx.binding.modules ?? []).map((m) => [m.name, m.desired(spec, ref, secret)])),
    common,
  };
}
