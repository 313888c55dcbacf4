// One object of `edgectl plan`: the operator's own steps with every write left out. What the
// spec wants (engine/resolve.ts `wanted`), what the API holds (one GET), then the engine's pure
// decisions (engine/plan*.ts) described as a PlanEntry (preview-entry.ts). Nothing here writes:
// the engine's Kubernetes writer, Event recorder and account clients refuse if ever asked.
import type { Logger } from 'pino';
import type { EdgeClient } from '../api/client.ts';
import { isNotFound } from '../api/errors.ts';
import type { PreviewAccounts } from './preview-accounts.ts';
import type { Overlay, PreviewSecrets } from './preview-cache.ts';
import { changesOf, createBody, type PlanEntry } from './preview-entry.ts';
import { describeAccount } from './runtime/accounts/resolve.ts';
import type { AnyBinding } from './runtime/bindings/binding.ts';
import { decodeMetadata } from './runtime/bindings/owner.ts';
import {
  CREATE_PENDING_ANNOTATION,
  ID_ANNOTATION,
  managedResource,
  PAUSED_ANNOTATION,
} from './runtime/constants.ts';
import {
  type ConflictInput,
  deleteGuard,
  digestsOf,
  type EngineContext,
  type EngineOptions,
  needsOwnerState,
  observeOnlyId,
  ownerOf,
  planFinalize,
  planObserveOnly,
  planReconcile,
  planSync,
  type Remote,
  type Seen,
  type SyncDecision,
  statusOf,
  type Wanted,
  wanted,
} from './runtime/engine/index.ts';
import type { KubeObject } from './runtime/kube/kube.ts';

/** What every object's plan reads: the cluster after the apply, Secrets, accounts, one GET per id. */
export interface PlanEnv {
  overlay: Overlay;
  secrets: PreviewSecrets;
  accounts: PreviewAccounts;
  clusterId: string;
  /** The operator's digest key, when the caller may read it: secret values are compared with it. */
  digestKey?: string;
  /** A GET of the remote resource, once per account and id whatever the passes. */
  read(ctx: EngineContext, id: string, desired: Record<string, unknown>): Promise<Seen>;
}

type Described = Omit<PlanEntry, 'kind' | 'namespace' | 'name'>;

const refuseWrite = (what: string) => () => {
  throw new Error(`preview: the engine tried to ${what}`);
};
/** Any logger method does nothing; a child is the same logger. */
const SILENT: Logger = new Proxy({} as Logger, {
  get: (_t, p) => (p === 'child' ? () => SILENT : () => {}),
});
/** The engine's memos are its process's; the preview has none, and nothing it calls reads them. */
const NO_MEMOS = new Proxy({} as EngineContext['memos'], { get: refuseWrite('use its memos') });

/** A GET of the remote resource: not found is an answer, any other failure the preview's error. */
export async function getRemote(
  binding: AnyBinding,
  client: EdgeClient,
  id: string,
  desired: Record<string, unknown>,
): Promise<Seen> {
  try {
    return { found: true, remote: (await binding.api.get(client, id, desired)) as Remote };
  } catch (err) {
    if (isNotFound(err)) return { found: false };
    throw new Error(`get ${id}: ${(err as Error).message}`);
  }
}

/** The engine's context for one object: the same parts the operator's has, every writer refusing. */
function contextFor(
  env: PlanEnv,
  binding: AnyBinding,
  client: EdgeClient,
  account: string,
): Omit<EngineContext, 'mayAdopt'> {
  const opts: EngineOptions & { api: EdgeClient } = {
    binding,
    kube: { patch: refuseWrite('write to Kubernetes') as never },
    api: client,
    accounts: env.accounts.engineAccounts(),
    events: { record: refuseWrite('record an Event') } as unknown as EngineOptions['events'],
    log: SILENT,
    clusterId: env.clusterId,
    digestKey: env.digestKey ?? '',
    resyncMs: 0,
    cache: env.overlay.view(binding.kind),
    secrets: env.secrets,
  };
  const resource = managedResource(binding.plural);
  return { opts, account, binding, resource, memos: NO_MEMOS, name: binding.kind.toLowerCase() };
}

const isFailure = (x: unknown): x is { phase: { state: string; reason: string; message: string } } =>
  typeof x === 'object' && x !== null && (x as { failed?: unknown }).failed === true;

/** A reconcile that cannot finish: Stalled is a refusal, anything else a wait. */
const fromFailure = (f: { phase: { state: string; reason: string; message: string } }): Described => ({
  action: f.phase.state === 'stalled' ? 'refuse' : 'wait',
  reason: f.phase.reason,
  message: f.phase.message,
});

/** What the operator would do with the object (as the apply would leave it). */
export async function planObject(env: PlanEnv, binding: AnyBinding, obj: KubeObject): Promise<PlanEntry> {
  const head = { kind: binding.kind, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name };
  try {
    return { ...head, ...(await describe(env, binding, obj)) };
  } catch (err) {
    return { ...head, action: 'error', message: (err as Error).message };
  }
}

/**
 * As the engine does with a status.account the namespace may not use: status.id is not trusted
 * either, and the object's own resource is looked for by its owner marker (a create-pending mark).
 */
async function describe(env: PlanEnv, binding: AnyBinding, given: KubeObject): Promise<Described> {
  const forged = env.accounts.forged(given);
  if (!forged) return decide(env, binding, given);
  const obj = structuredClone(given);
  const status = obj.status as Record<string, unknown>;
  delete status.id;
  delete status.account;
  obj.metadata.annotations = { ...obj.metadata.annotations, [CREATE_PENDING_ANNOTATION]: 'true' };
  const d = await decide(env, binding, obj);
  const note = `status.account names ${describeAccount(forged)}, which namespace ${obj.metadata.namespace} may not use: ignored with status.id, as the operator ignores them`;
  return { ...d, notes: [note, ...(d.notes ?? [])] };
}

async function decide(env: PlanEnv, binding: AnyBinding, obj: KubeObject): Promise<Described> {
  const p = planReconcile(obj);
  const id = statusOf(obj).id;
  if (p.step.action === 'pause')
    return {
      action: 'nothing',
      id,
      reason: 'Paused',
      message: `${PAUSED_ANNOTATION} is "true": no API call for it until the annotation goes`,
    };
  if (p.step.action === 'release')
    return { action: 'nothing', id, message: 'being deleted, and nothing of it remains remotely' };
  const r = p.step.action === 'finalize' ? env.accounts.forDelete(obj) : env.accounts.accountOf(obj);
  if (!r.ok) return fromFailure({ phase: r });
  const client = await env.accounts.client(r.id);
  if ('action' in client) return { account: r.id, ...client };
  const ctx: EngineContext = {
    ...contextFor(env, binding, client, r.id),
    mayAdopt: env.accounts.mayAdopt(r.id, obj.metadata.namespace ?? ''),
  };
  const step = p.step;
  const described =
    step.action === 'finalize'
      ? await planDelete(env, ctx, obj)
      : step.action === 'observe-only'
        ? await planObserve(env, ctx, obj)
        : await planChange(env, ctx, obj, step.finalizer);
  return { account: r.id, ...described };
}

/** The owner marker's object, read only when it names another object of this installation. */
async function ownerStateOf(env: PlanEnv, ctx: EngineContext, obj: KubeObject, seen: Seen | undefined) {
  if (!seen?.found) return undefined;
  const marker = decodeMetadata(seen.remote.metadata).owner;
  if (!needsOwnerState(marker, ownerOf(ctx.binding.kind, obj, env.clusterId))) return undefined;
  return env.overlay.ownerState(marker!.object, marker!.uid, obj.metadata.namespace ?? '');
}

/** Create, update, adopt, nothing or refuse: the operator's sync without its writes. */
async function planChange(
  env: PlanEnv,
  ctx: EngineContext,
  obj: KubeObject,
  finalizer: 'keep' | 'restore' | 'add',
): Promise<Described> {
  const want = await wanted(ctx, obj);
  if (isFailure(want)) return fromFailure(want);
  const notes: string[] = [];
  const ann = obj.metadata.annotations ?? {};
  const id = statusOf(obj).id ?? ann[ID_ANNOTATION];
  if (!id && ann[CREATE_PENDING_ANNOTATION])
    notes.push(
      'a create of it may have been made already (create-pending): the operator looks for it by its owner marker first',
    );
  const seen = id ? await env.read(ctx, id, want.desired) : undefined;
  const ownerState = await ownerStateOf(env, ctx, obj, seen);
  const secrets = secretComparison(env, ctx.binding, obj, want, notes);
  const d = planSync({
    ...{ binding: ctx.binding, obj, clusterId: env.clusterId, want, id, seen, ownerState },
    ...{ conflict: conflictInput(env, ctx, want), finalizer, mayAdopt: ctx.mayAdopt, ...secrets },
  });
  return { ...describeSync(ctx.binding, d, want, seen), ...(notes.length && { notes }) };
}

/**
 * The digest key and the digests applied that secret values are compared with. Without the
 * operator's key (a Secret of its namespace the caller may not read) a secret the operator applied
 * is taken as unchanged, and the entry says so.
 */
function secretComparison(env: PlanEnv, binding: AnyBinding, obj: KubeObject, want: Wanted, notes: string[]) {
  if (env.digestKey) return { digestKey: env.digestKey };
  const digestKey = 'preview: the operator digest key is not known';
  const applied = statusOf(obj).secretDigests;
  if (!applied) return { digestKey };
  const now = digestsOf(binding, want.modules, digestKey, obj.metadata.namespace ?? '');
  const taken = Object.keys(applied).filter((m) => now[m]);
  if (taken.length)
    notes.push(
      `secret values of ${taken.join(', ')} not compared (the operator's digest key is not readable to you): taken as unchanged`,
    );
  return { digestKey, applied: { ...applied, ...Object.fromEntries(taken.map((m) => [m, now[m]!])) } };
}

/** The objects of the kind (after the apply) that may hold what the API keeps unique, in the same account. */
function conflictInput(env: PlanEnv, ctx: EngineContext, want: Wanted): ConflictInput | undefined {
  const { binding } = ctx;
  const c = binding.conflict;
  if (!c) return undefined;
  const key = c.key(want.desired);
  const objects = env.overlay.list(binding.kind);
  const ref = (o: KubeObject) => (kind: string, name: string) => {
    const target = statusOf(env.overlay.get(kind, o.metadata.namespace!, name) ?? { metadata: { name } }).id;
    if (!target) throw new Error(`${kind} ${name} has no id`);
    return target;
  };
  const others = objects.flatMap((o) => {
    if (!statusOf(o).id) return [];
    const r = env.accounts.accountOf(o);
    if (!r.ok || r.id !== ctx.account) return [];
    try {
      const k = c.key(binding.desired(o.spec ?? {}, ref(o)));
      return k === key ? [{ obj: o, key: k }] : [];
    } catch {
      return [];
    }
  });
  const uids = new Set(objects.map((o) => o.metadata.uid));
  // resources made outside the cluster are in the kind's bulk list, which the preview does not read
  return { key, others, live: { has: (uid) => uids.has(uid) }, remotes: [] };
}

/** A sync decision as printed. */
export function describeSync(binding: AnyBinding, d: SyncDecision, want: Wanted, seen?: Seen): Described {
  switch (d.action) {
    case 'create':
      return { action: 'create', body: createBody(binding, want) };
    case 'recreate':
      return {
        action: 'create',
        message: `${d.gone} was deleted outside the cluster: made again`,
        body: createBody(binding, want),
      };
    case 'stall':
      return { action: 'refuse', reason: d.reason, message: d.message };
    case 'nothing':
      return { action: 'nothing', id: d.id };
    default: {
      const remote = (seen as { remote: Remote }).remote;
      return { action: d.action, id: d.id, changes: changesOf(binding, remote, d.patch, d.modules) };
    }
  }
}

/** Observe-only: nothing is ever written; the drift is what the object would report. */
async function planObserve(env: PlanEnv, ctx: EngineContext, obj: KubeObject): Promise<Described> {
  const known = observeOnlyId(obj);
  if ('action' in known) return { action: 'refuse', reason: known.reason, message: known.message };
  const want = await wanted(ctx, obj);
  if (isFailure(want)) return fromFailure(want);
  const seen = await env.read(ctx, known.id, want.desired);
  const ownerState = await ownerStateOf(env, ctx, obj, seen);
  const d = planObserveOnly({
    ...{ binding: ctx.binding, obj, clusterId: env.clusterId, id: known.id, seen, want },
    ...{ ownerState, mayAdopt: ctx.mayAdopt },
  });
  if (d.action === 'stall') return { action: 'refuse', reason: d.reason, message: d.message };
  return { action: 'nothing', id: known.id, reason: d.phase.reason, message: d.phase.message };
}

/** An object being deleted: the remote resource goes, is kept, or waits for its referrers. */
async function planDelete(env: PlanEnv, ctx: EngineContext, obj: KubeObject): Promise<Described> {
  const { binding } = ctx;
  const ns = obj.metadata.namespace ?? '';
  const id = statusOf(obj).id;
  const referrers = id ? env.overlay.referrersOf(binding.kind, ns, obj.metadata.name) : [];
  const d = planFinalize({ obj, id, referrers });
  if (d.action === 'done' || d.action === 'release')
    return { action: 'nothing', id, message: 'being deleted, and nothing of it remains remotely' };
  if (d.action === 'retain') return { action: 'delete', id, message: `${d.message}: only the object goes` };
  if (d.action === 'wait') return { action: 'wait', id, reason: d.reason, message: d.message };
  const seen = await env.read(ctx, d.id, binding.desiredFromStatus?.(statusOf(obj)) ?? {});
  const unmarked = seen.found && !decodeMetadata(seen.remote.metadata).owner;
  const other = unmarked
    ? env.overlay
        .list(binding.kind)
        .find((o) => o.metadata.uid !== obj.metadata.uid && statusOf(o).id === d.id)
    : undefined;
  const guard = deleteGuard({
    id: d.id,
    self: ownerOf(binding.kind, obj, env.clusterId),
    namespace: ns,
    evidence: seen,
    claimedBy: other && `${binding.kind}/${other.metadata.namespace}/${other.metadata.name}`,
    mayAdopt: ctx.mayAdopt,
  });
  if (guard.action === 'release')
    return { action: 'refuse', id: d.id, reason: guard.reason, message: guard.message };
  if (guard.action === 'gone')
    return { action: 'delete', id: d.id, message: `${d.id} no longer exists: only the object goes` };
  return { action: 'delete', id: d.id, message: 'being deleted: its remote resource goes with it' };
}
