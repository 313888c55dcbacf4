// What an object wants: what the caches say of the ids and objects its spec names, and its
// Secrets' values, read here; the decisions (refusals, waits, the desired fields and modules)
// are plan-want.ts's, pure.
import type { KubeObject } from '../kube/kube.ts';
import { adoptedId, rawIds } from './facts.ts';
import { type Failure, isFailure } from './failure.ts';
import { type Held, planReferences, planWanted, type SecretFacts, type WantFacts } from './plan-want.ts';
import type { EngineContext, Status, Wanted } from './types.ts';

/** The object `kind/name` of `namespace` as the caches show it, or undefined. */
function held(ctx: EngineContext, kind: string, namespace: string, name: string): Held | undefined {
  const { cache, accounts } = ctx.opts;
  const target = cache.lookup(kind, namespace, name);
  if (!target) return undefined;
  const status = target.status as Status | undefined;
  const theirs = accounts && ctx.account ? accounts.accountOf(target) : undefined;
  return {
    kind,
    name,
    namespace,
    ...(status?.id ? { id: status.id } : {}),
    confirmed: cache.confirmedId?.(kind, namespace, name),
    checks: !!cache.confirmedId,
    ...(theirs?.ok ? { account: theirs.id } : {}),
    stalled: !!status?.conditions?.some((c) => c.type === 'Stalled' && c.status === 'True'),
  };
}

/**
 * A path of references from the referenced object back to `obj`, or undefined. Only
 * read for a reference without an id, so a cycle stalls with its members named instead of
 * waiting forever.
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

/** What the caches say of the spec's raw ids, the id named for adoption and the references. */
export function readWantFacts(ctx: EngineContext, obj: KubeObject): WantFacts {
  const { cache } = ctx.opts;
  const ns = obj.metadata.namespace!;
  const spec = obj.spec ?? {};
  const adopted = adoptedId(obj);
  return {
    ...(ctx.account ? { account: ctx.account } : {}),
    mayAdopt: ctx.mayAdopt,
    rawIds: rawIds(spec, 'spec').map(({ path, id }) => {
      const h = cache.managerOf(id);
      // the holder's account is known only while the cache shows the holder
      const holder =
        h &&
        (held(ctx, h.kind, h.namespace, h.name) ?? {
          ...h,
          confirmed: cache.confirmedId?.(h.kind, h.namespace, h.name),
          checks: !!cache.confirmedId,
        });
      return { path, id, elsewhere: !!cache.managedElsewhere(id, ns), ...(holder ? { holder } : {}) };
    }),
    ...(adopted ? { adopted: { id: adopted, holder: cache.managerOf(adopted)?.namespace } } : {}),
    references: (ctx.binding.references?.(spec) ?? []).map((r) => {
      const target = held(ctx, r.kind, ns, r.name);
      const cycle = target?.id ? undefined : cycleThrough(ctx, obj, r);
      return {
        kind: r.kind,
        name: r.name,
        path: r.path,
        ...(target ? { target } : {}),
        ...(cycle ? { cycle } : {}),
      };
    }),
  };
}

/** Each referenced Secret key's value, up to the first one missing (no use reading further). */
export async function readSecrets(ctx: EngineContext, obj: KubeObject): Promise<SecretFacts[]> {
  const out: SecretFacts[] = [];
  for (const s of ctx.binding.secrets?.(obj.spec ?? {}) ?? []) {
    const value = await ctx.opts.secrets.value(obj.metadata.namespace!, s.name, s.key);
    out.push({ name: s.name, key: s.key, path: s.path, value });
    if (value == null) break;
  }
  return out;
}

/** What the object asks the API for: references resolved, Secrets read, modules built. */
export async function wanted(ctx: EngineContext, obj: KubeObject): Promise<Wanted | Failure> {
  const ids = planReferences(obj, readWantFacts(ctx, obj));
  if (isFailure(ids)) return ids;
  const secrets = await readSecrets(ctx, obj);
  return planWanted({ binding: ctx.binding, obj, clusterId: ctx.opts.clusterId, ids, secrets });
}
