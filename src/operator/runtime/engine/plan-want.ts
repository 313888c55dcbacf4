// Pure: what an object wants, from what the caches say of the ids and objects it names
// (read by resolve.ts): an id another namespace manages, a reference listed twice, in a
// cycle or across accounts, an owner marker too long stall; a reference without a checked id
// or a missing Secret waits; else the desired fields and modules.
import { isReachableId } from '../../../api/limits.ts';
import { describeAccount } from '../accounts/resolve.ts';
import type { AnyBinding, Common } from '../bindings/binding.ts';
import { encodeMetadata } from '../bindings/owner.ts';
import type { KubeObject } from '../kube/kube.ts';
import { type Failure, failure, QUIET_WAIT_FOR_PROGRESS_MS, QUIET_WAIT_MS, stalled } from './failure.ts';
import { adoptionMessage, ownerOf } from './plan.ts';
import type { Wanted } from './types.ts';

export const METADATA_MAX = 4096;

/** An object another id or reference names, as the caches show it. */
export interface Held {
  kind: string;
  name: string;
  /** Its namespace (a raw id's holder may be another namespace's). */
  namespace: string;
  /** Its id, in status. */
  id?: string;
  /** The id a sync here took as its own; `checks`: the cache keeps such ids at all. */
  confirmed?: string;
  checks: boolean;
  /** Its account, when there are accounts and it resolves to one. */
  account?: string;
  /** Its Stalled condition is True. */
  stalled?: boolean;
}

/** What the caches say of one raw id of the spec. */
export interface RawIdFacts {
  path: string;
  id: string;
  /** An object of another namespace manages it. */
  elsewhere: boolean;
  /** The object holding it, if any. */
  holder?: Held;
}

/** One reference of the spec, with its target as the cache shows it (none: not there). */
export interface ReferenceFacts {
  kind: string;
  name: string;
  path: string;
  target?: Held;
  /** For a target without an id: the references leading back to this object, if they do. */
  cycle?: string[];
}

/** What a refusal of the spec's ids and references is decided from. */
export interface WantFacts {
  /** This object's account (with accounts). */
  account?: string;
  mayAdopt?: boolean;
  rawIds: RawIdFacts[];
  /** The id named for adoption (resolve.ts adoptedId), and the namespace of the object holding it, if any. */
  adopted?: { id: string; holder?: string };
  references: ReferenceFacts[];
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

/** An id in status that no sync here took as the object's own proves nothing yet (a status writer may have put it there). */
const unchecked = (h: Held, id: string | undefined) => h.checks && h.confirmed !== id;

/** A reference never crosses accounts: a route of account A never points at a backend of account B. */
function crossed(account: string | undefined, target: Held, what: string): Failure | undefined {
  if (!account || target.account === undefined || target.account === account) return undefined;
  return stalled(
    'AccountMismatch',
    `${what} is in ${describeAccount(target.account)}, this object in ${describeAccount(account)}: a reference never crosses accounts`,
  );
}

/**
 * Ids written into the spec (`ipPolicyID`, `backendID`: resources made elsewhere) must not be
 * another namespace's resources: a namespace is a tenant.
 */
function refuseRawIds(f: WantFacts): Failure | undefined {
  for (const { path, id, elsewhere, holder } of f.rawIds) {
    if (elsewhere)
      return stalled(
        'ReferenceNotAllowed',
        `${path}: ${id} is managed by an object in another namespace; a namespace may reference by id only resources made outside the cluster or shared with it (--shared-namespaces)`,
      );
    // an id another account's object holds is unknown to this account's key (it would answer 404)
    if (holder && unchecked(holder, id)) return unconfirmed(`${path}: ${id} (${holder.kind} ${holder.name})`);
    // one no object here holds: made outside the cluster (or by another installation)
    if (!holder && f.mayAdopt === false && isReachableId(id))
      return stalled('AdoptionNotAllowed', adoptionMessage(`${path}: ${id} is no object's of this cluster`));
    const c = holder && crossed(f.account, holder, `${path}: ${id} (${holder.kind} ${holder.name})`);
    if (c) return c;
  }
  return undefined;
}

/**
 * The id annotation names a resource to adopt (or to read): not one an object of another
 * namespace manages, even in a shared account. Adopting rewrites the resource to this
 * object's spec and deletes it with this object. A resource adopted without a write, or only
 * observed, carries no owner marker to refuse it (plan.ts `ownership`): the caches know who
 * holds it.
 */
function refuseAdoptedId(obj: KubeObject, f: WantFacts): Failure | undefined {
  const a = f.adopted;
  if (!a?.holder || a.holder === obj.metadata.namespace) return undefined;
  // as plan.ts says it of a marked resource: the same words whichever way it is known
  return stalled(
    'OwnedElsewhere',
    `${a.id} is managed by an object in another namespace; not taking it over`,
  );
}

/** Each referenced object's id, by `Kind/name`; a duplicate or a cycle stalls, a missing id waits. */
function resolveReferences(f: WantFacts): Map<string, string> | Failure {
  const ids = new Map<string, string>();
  const seen = new Map<string, string>();
  for (const r of f.references) {
    const first = seen.get(`${r.kind}/${r.name}`);
    if (first)
      return stalled(
        'DuplicateReference',
        `${r.path} and ${first} both reference ${r.kind} ${r.name}: list each once`,
      );
    seen.set(`${r.kind}/${r.name}`, r.path);
  }
  for (const r of f.references) {
    const what = `${r.path}: ${r.kind} ${r.name}`;
    const c = r.target && crossed(f.account, r.target, what);
    if (c) return c;
    const id = r.target?.id;
    // an id in status that no sync here took as the object's own is not used (a status writer
    // could point it at a resource of the account nobody here made): wait for that sync
    if (id && unchecked(r.target!, id)) return unconfirmed(what);
    // a referenced object being deleted keeps its remote resource while this one uses it
    // (it waits as InUse), so its id still serves
    if (!id) {
      if (r.cycle)
        return stalled(
          'ReferenceCycle',
          `references form a cycle: ${r.cycle.join(' -> ')}; break it to continue`,
        );
      return failure(
        {
          state: 'progressing',
          reason: 'WaitingForReference',
          message: `waiting for ${r.kind} ${r.name} (${r.path}) to have an id`,
        },
        {},
        r.target && !r.target.stalled ? QUIET_WAIT_FOR_PROGRESS_MS : QUIET_WAIT_MS,
      );
    }
    ids.set(`${r.kind}/${r.name}`, id);
  }
  return ids;
}

/** The spec's ids and references refused, or each reference's id (by `Kind/name`). */
export function planReferences(obj: KubeObject, f: WantFacts): Map<string, string> | Failure {
  return refuseRawIds(f) ?? refuseAdoptedId(obj, f) ?? resolveReferences(f);
}

/** A referenced Secret key: its value (base64), undefined without the key, null without the Secret. */
export interface SecretFacts {
  name: string;
  key: string;
  path: string;
  value: string | undefined | null;
}

type Spec = Record<string, unknown> & { description?: string; metadata?: string };

/** What the object asks the API for, from its references' ids and its Secrets' values; or why not. */
export function planWanted(i: {
  binding: AnyBinding;
  obj: KubeObject;
  clusterId: string;
  ids: Map<string, string>;
  secrets: SecretFacts[];
}): Wanted | Failure {
  const spec = (i.obj.spec ?? {}) as Spec;
  const values = new Map<string, string>();
  for (const s of i.secrets) {
    if (s.value == null)
      return failure({
        state: 'progressing',
        reason: 'WaitingForSecret',
        message:
          s.value === undefined
            ? `Secret ${s.name} has no key ${s.key} (${s.path})`
            : `Secret ${s.name} not found (${s.path})`,
      });
    values.set(`${s.name}/${s.key}`, Buffer.from(s.value, 'base64').toString('utf8'));
  }
  const ref = (kind: string, name: string) => i.ids.get(`${kind}/${name}`)!;
  const secret = (name: string, key: string) => values.get(`${name}/${key}`)!;
  const common: Common = {
    description: spec.description ?? '',
    metadata: encodeMetadata(ownerOf(i.binding.kind, i.obj, i.clusterId), spec.metadata ?? ''),
  };
  if (Buffer.byteLength(common.metadata) > METADATA_MAX)
    return stalled(
      'MetadataTooLong',
      `spec.metadata with the owner marker exceeds the API's ${METADATA_MAX} bytes`,
    );
  return {
    desired: i.binding.desired(spec, ref),
    modules: new Map((i.binding.modules ?? []).map((m) => [m.name, m.desired(spec, ref, secret)])),
    common,
  };
}
