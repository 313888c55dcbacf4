// Pure: the engine's decisions for one object turned into what `edgectl plan` prints and the
// exit code of the whole plan. The decisions themselves are the engine's (engine/plan*.ts);
// here they are only described: the wire body of a create, the fields an update changes (was
// -> will be), the reason and message of a refusal. Secret values are never shown.
import { isDeepStrictEqual } from 'node:util';
import type { AnyBinding } from './runtime/bindings/binding.ts';
import { outputToInput } from './runtime/bindings/module-compare.ts';
import type { ModuleStep, Remote, Wanted } from './runtime/engine/index.ts';

/**
 * What the operator would do with an object. `refuse`: it would be Stalled; `wait`: it could
 * not go on (a Secret, a reference or an account it waits for); `error`: the preview could not
 * tell (the API or the cluster did not answer, a Secret the caller may not read).
 */
export type PlanAction = 'create' | 'update' | 'adopt' | 'delete' | 'nothing' | 'refuse' | 'wait' | 'error';

export const ACTIONS: readonly PlanAction[] = [
  'create',
  'update',
  'adopt',
  'delete',
  'nothing',
  'refuse',
  'wait',
  'error',
];

/** One field the operator would change: its wire name, the value the API holds, the one it would send. */
export interface FieldChange {
  field: string;
  was: unknown;
  will: unknown;
}

/** One object of the files and what the operator would do with it. */
export interface PlanEntry {
  kind: string;
  namespace: string;
  name: string;
  action: PlanAction;
  /** The remote resource's id, when there is one. */
  id?: string;
  /** The account the object resolves to (`installation`, `EdgeAccount/ns/name`, `ClusterEdgeAccount/name`). */
  account?: string;
  /** A refusal's or a wait's condition reason (the Stalled reason the object would get), or why nothing. */
  reason?: string;
  message?: string;
  /** A create's wire body (modules inline, secret values masked). */
  body?: Record<string, unknown>;
  /** An update's or an adoption's fields, a module's whole body. */
  changes?: FieldChange[];
  /** What the preview could not see (secret values not compared...). */
  notes?: string[];
}

/** What stands for a secret value in a body or a change. */
export const SECRET = '(secret)';
/** ... and for a secret value the operator would change. */
export const SECRET_CHANGED = '(another secret)';

/** The text a reference to an object that does not have its id yet shows in a body. */
export const placeholderId = (kind: string, name: string) => `<id of ${kind}/${name}>`;

/** The exit code, as `terraform plan -detailed-exitcode`: 0 nothing to do, 2 changes, 1 refusals (they win). */
export function exitCodeOf(entries: readonly Pick<PlanEntry, 'action'>[]): 0 | 1 | 2 {
  if (entries.some((e) => e.action === 'refuse' || e.action === 'wait' || e.action === 'error')) return 1;
  if (entries.some((e) => e.action !== 'nothing')) return 2;
  return 0;
}

/** How many objects take each action (every action named, 0 included: a stable shape). */
export function summaryOf(entries: readonly Pick<PlanEntry, 'action'>[]): Record<PlanAction, number> {
  const out = Object.fromEntries(ACTIONS.map((a) => [a, 0])) as Record<PlanAction, number>;
  for (const e of entries) out[e.action]++;
  return out;
}

/** The JSON document of `-o json`: one entry per object, in the files' order, with the summary. */
export function planDocument(entries: readonly PlanEntry[]) {
  return {
    kind: 'EdgePlan',
    version: 1,
    exitCode: exitCodeOf(entries),
    summary: summaryOf(entries),
    objects: entries.map((e) => ({
      kind: e.kind,
      namespace: e.namespace,
      name: e.name,
      action: e.action,
      ...(e.id !== undefined && { id: e.id }),
      ...(e.account !== undefined && { account: e.account }),
      ...(e.reason !== undefined && { reason: e.reason }),
      ...(e.message !== undefined && { message: e.message }),
      ...(e.body !== undefined && { body: e.body }),
      ...(e.changes !== undefined && { diff: e.changes }),
      ...(e.notes?.length && { notes: e.notes }),
    })),
  };
}

/** A copy of a module body with the values at its secret paths (`a.b`, `*` any key) masked. */
export function maskSecrets(body: unknown, paths: readonly string[] = []): unknown {
  if (!body || typeof body !== 'object' || !paths.length) return body;
  const copy = structuredClone(body) as Record<string, unknown>;
  const walk = (o: unknown, path: string[]) => {
    if (!o || typeof o !== 'object' || !path.length) return;
    const [head, ...rest] = path as [string, ...string[]];
    for (const k of head === '*' ? Object.keys(o) : [head]) {
      if (!(k in (o as object))) continue;
      const rec = o as Record<string, unknown>;
      if (rest.length) walk(rec[k], rest);
      else if (rec[k] !== undefined && rec[k] !== null) rec[k] = SECRET;
    }
  };
  for (const p of paths) walk(copy, p.split('.'));
  return copy;
}

const secretPathsOf = (binding: AnyBinding, module: string) =>
  binding.modules?.find((m) => m.name === module)?.secretPaths ?? [];

/** The body a create sends: the wanted fields, description and metadata, the modules inline. */
export function createBody(binding: AnyBinding, want: Wanted): Record<string, unknown> {
  const inline = Object.fromEntries(
    [...want.modules]
      .filter(([, v]) => v !== null)
      .map(([name, v]) => [name, maskSecrets(v, secretPathsOf(binding, name))]),
  );
  return { ...want.desired, ...want.common, ...inline };
}

/**
 * The fields a PATCH would change, each with what the API holds (`was`), then each module step
 * (its body as the API holds it, in the input's shape, and the one it would PUT, or null).
 */
export function changesOf(
  binding: AnyBinding,
  remote: Remote,
  patch: Record<string, unknown>,
  modules: readonly ModuleStep[],
): FieldChange[] {
  const projected = binding.fromRemote(remote) as Record<string, unknown>;
  const held = (k: string) =>
    k === 'description'
      ? (remote.description ?? '')
      : k === 'metadata'
        ? (remote.metadata ?? '')
        : projected[k];
  const out: FieldChange[] = Object.entries(patch).map(([field, will]) => ({
    field,
    was: held(field),
    will,
  }));
  for (const s of modules) {
    const paths = secretPathsOf(binding, s.name);
    const have = remote[s.name] as Record<string, unknown> | null | undefined;
    const was = have ? maskSecrets(outputToInput(have), paths) : null;
    const will = 'put' in s ? maskSecrets(s.put, paths) : null;
    // a module whose only difference is a secret value would show two equal masked bodies
    out.push(
      isDeepStrictEqual(was, will) && 'put' in s
        ? { field: `${s.name} (a secret value)`, was: SECRET, will: SECRET_CHANGED }
        : { field: s.name, was, will },
    );
  }
  return out;
}
