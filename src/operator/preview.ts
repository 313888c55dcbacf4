// `edgectl plan`: what the operator would do with the custom resources of some files, against
// the live cluster and account, read-only. Gathered here (GET and LIST only, with the caller's
// own Kubernetes rights; one API GET per object with an id), decided by the engine's own code
// (preview-plan.ts), described for print (preview-entry.ts).

import { BINDINGS } from './kinds/index.ts';
import { type InstallationSettings, PreviewAccounts } from './preview-accounts.ts';
import { afterApply, keyIn, keyOfObject, Overlay, PreviewSecrets, SECRETS } from './preview-cache.ts';
import { type PlanEntry, placeholderId } from './preview-entry.ts';
import { getRemote, type PlanEnv, planObject } from './preview-plan.ts';
import { ACCOUNT_KINDS, type AccountKind, accountResource } from './runtime/accounts/kinds.ts';
import type { AnyBinding } from './runtime/bindings/binding.ts';
import { GROUP, ID_ANNOTATION, managedResource } from './runtime/constants.ts';
import { DIGEST_KEY_SECRET } from './runtime/kube/digest-key.ts';
import {
  isKubeNotFound,
  type Kube,
  KubeError,
  type KubeObject,
  type ResourcePath,
} from './runtime/kube/kube.ts';
import { secretValue } from './runtime/kube/secrets.ts';

const NAMESPACES = { group: '', version: 'v1', plural: 'namespaces' };

export interface PreviewInput {
  kube: Kube;
  /** Every document of the files, namespaced ones with their namespace. */
  objects: KubeObject[];
  /** The operator's --cluster-id (default: the uid of kube-system, as the operator's). */
  clusterId?: string;
  /** The operator's --shared-namespaces. */
  sharedNamespaces: string[];
  installation: InstallationSettings;
  /** How many times references to objects the files create are settled (2 in practice). */
  maxPasses?: number;
}

export interface PreviewResult {
  entries: PlanEntry[];
  /** What the preview could not see, for every object. */
  notes: string[];
}

const forbidden = (e: unknown) => e instanceof KubeError && e.status === 403;
const isManaged = (o: KubeObject) =>
  (o.apiVersion ?? '').startsWith(`${GROUP}/`) && BINDINGS.some((b) => b.kind === o.kind);
const isAccount = (o: KubeObject) =>
  (o.apiVersion ?? '').startsWith(`${GROUP}/`) && (ACCOUNT_KINDS as readonly string[]).includes(o.kind ?? '');

/** Every page of a list, with the kind on each item. */
async function listAll(kube: Kube, r: ResourcePath, kind: string, namespace?: string): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  let cont: string | undefined;
  do {
    const page = await kube.list(r, namespace, { limit: 500, continue: cont });
    out.push(...page.items.map((o) => ({ ...o, kind })));
    cont = page.metadata.continue || undefined;
  } while (cont);
  return out;
}

/**
 * A kind's objects in every namespace or, when the caller may not list them all, in the files'
 * namespaces (said in `notes`); none when its CRD is not installed.
 */
async function listKind(
  kube: Kube,
  r: ResourcePath,
  kind: string,
  namespaces: string[],
  notes: string[],
): Promise<KubeObject[]> {
  try {
    return await listAll(kube, r, kind);
  } catch (err) {
    if (isKubeNotFound(err)) return [];
    if (!forbidden(err)) throw err;
  }
  notes.push(
    `you may not list ${r.plural} in every namespace: only ${namespaces.join(', ')} read (the operator sees the others: a resource another namespace manages is refused all the same, by its owner marker)`,
  );
  const per = await Promise.all(
    namespaces.map((ns) =>
      listAll(kube, r, kind, ns).catch((err) => {
        if (isKubeNotFound(err)) return [];
        throw err;
      }),
    ),
  );
  return per.flat();
}

async function clusterIdOf(kube: Kube, given: string | undefined): Promise<string> {
  if (given) return given;
  try {
    return (await kube.get(NAMESPACES, undefined, 'kube-system')).metadata.uid!;
  } catch (err) {
    throw new Error(
      `cannot read the cluster id (the uid of namespace kube-system: ${(err as Error).message}): pass the operator's --cluster-id (chart value clusterId)`,
    );
  }
}

/** The operator's digest key, when the caller may read it (else secret values are not compared). */
async function digestKeyOf(kube: Kube, namespace: string): Promise<string | undefined> {
  try {
    const v = secretValue(await kube.get(SECRETS, namespace, DIGEST_KEY_SECRET), 'key');
    return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
  } catch {
    return undefined;
  }
}

/** Account objects (live, the files' over them): EdgeAccounts by `namespace/name`, ClusterEdgeAccounts by name. */
async function accountObjects(kube: Kube, files: KubeObject[], namespaces: string[], notes: string[]) {
  const out = {} as Record<AccountKind, Map<string, KubeObject>>;
  for (const kind of ACCOUNT_KINDS) {
    const r = accountResource(kind);
    const live =
      kind === 'EdgeAccount'
        ? await listKind(kube, r, kind, namespaces, notes)
        : await listAll(kube, r, kind).catch((err) => {
            if (isKubeNotFound(err)) return [];
            if (!forbidden(err)) throw err;
            notes.push(
              'you may not list ClusterEdgeAccounts: objects naming one are planned as if it did not exist',
            );
            return [];
          });
    const byName = (o: KubeObject) =>
      kind === 'EdgeAccount' ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
    out[kind] = new Map([...live, ...files.filter((f) => f.kind === kind)].map((o) => [byName(o), o]));
  }
  return out;
}

/**
 * Each namespace's labels (a ClusterEdgeAccount may admit by label): the files' Namespace, else
 * the cluster's; none when it does not exist, or when the caller may not read it (said in `notes`).
 */
async function namespaceLabels(kube: Kube, objects: KubeObject[], namespaces: string[], notes: string[]) {
  const out = new Map<string, Record<string, string> | undefined>();
  for (const ns of namespaces) {
    const file = objects.find((o) => o.kind === 'Namespace' && o.metadata.name === ns);
    const live = file
      ? undefined
      : await kube.get(NAMESPACES, undefined, ns).catch((err) => {
          if (isKubeNotFound(err)) return undefined;
          if (!forbidden(err)) throw err;
          notes.push(
            `you may not read namespace ${ns}: its labels are not known, and a ClusterEdgeAccount that admits it only by spec.namespaceSelector is planned as not admitting it (AccountNotAllowed)`,
          );
          return undefined;
        });
    out.set(ns, (file ?? live)?.metadata.labels ?? (file || live ? {} : undefined));
  }
  return out;
}

/** The managed objects of the files as the apply would leave them (the last of a name wins). */
function plannedObjects(files: KubeObject[], live: Map<string, KubeObject[]>): [AnyBinding, KubeObject][] {
  const byKey = new Map<string, KubeObject>();
  for (const f of files.filter(isManaged)) byKey.set(keyOfObject(f), f);
  return [...byKey.values()].map((f) => {
    const b = BINDINGS.find((x) => x.kind === f.kind)!;
    const l = live
      .get(b.kind)
      ?.find((o) => o.metadata.namespace === f.metadata.namespace && o.metadata.name === f.metadata.name);
    return [b, afterApply(b, f, l)];
  });
}

/** What the operator would do with each managed object of the files. */
export async function preview(i: PreviewInput): Promise<PreviewResult> {
  const { kube } = i;
  const notes: string[] = [];
  const managed = i.objects.filter(isManaged);
  const namespaces = [...new Set(managed.map((o) => o.metadata.namespace ?? 'default'))].sort();
  const clusterId = await clusterIdOf(kube, i.clusterId);
  const live = new Map<string, KubeObject[]>();
  for (const b of BINDINGS)
    live.set(b.kind, await listKind(kube, managedResource(b.plural), b.kind, namespaces, notes));
  const planned = plannedObjects(i.objects, live);
  const overlay = new Overlay({
    bindings: BINDINGS,
    live,
    planned: planned.map(([, o]) => o),
    kube,
    sharedNamespaces: i.sharedNamespaces,
  });
  const secrets = new PreviewSecrets(
    kube,
    i.objects.filter((o) => o.kind === 'Secret' && (o.apiVersion ?? 'v1') === 'v1'),
  );
  const accountsOf = await accountObjects(kube, i.objects.filter(isAccount), namespaces, notes);
  const accounts = new PreviewAccounts({
    installation: i.installation,
    edge: accountsOf.EdgeAccount,
    cluster: accountsOf.ClusterEdgeAccount,
    namespaceLabels: await namespaceLabels(kube, i.objects, namespaces, notes),
    secrets,
  });
  const digestKey = await digestKeyOf(kube, i.installation.namespace);
  const reads = new Map<string, Promise<Awaited<ReturnType<typeof getRemote>>>>();
  const env: PlanEnv = {
    ...{ overlay, secrets, accounts, clusterId, digestKey },
    read: (ctx, id, desired) => {
      const k = `${ctx.account}\t${id}`;
      if (!reads.has(k)) reads.set(k, getRemote(ctx.binding, ctx.opts.api, id, desired));
      return reads.get(k)!;
    },
  };
  try {
    return { entries: await settle(env, planned, i.maxPasses ?? 4), notes };
  } finally {
    await accounts.close();
  }
}

/**
 * Every object planned. Objects of the files without an id give their referrers the id the apply
 * would give them (a create's placeholder, an adopted id), and those that would get none (refused,
 * waiting) give none: planned again until that holds.
 */
async function settle(env: PlanEnv, planned: [AnyBinding, KubeObject][], maxPasses: number) {
  const { granted } = env.overlay;
  const keyOf = (b: AnyBinding, o: KubeObject) => keyIn(b.kind, o.metadata.namespace, o.metadata.name);
  const idless = new Set(
    planned.filter(([, o]) => !(o.status as { id?: string } | undefined)?.id).map(([b, o]) => keyOf(b, o)),
  );
  for (const [b, o] of planned)
    if (idless.has(keyOf(b, o)))
      granted.set(
        keyOf(b, o),
        o.metadata.annotations?.[ID_ANNOTATION] ?? placeholderId(b.kind, o.metadata.name),
      );
  let entries: PlanEntry[] = [];
  for (let pass = 0; pass < maxPasses; pass++) {
    entries = [];
    for (const [b, o] of planned) entries.push(await planObject(env, b, o));
    const given = new Map<string, string>();
    for (const e of entries) {
      const k = keyIn(e.kind, e.namespace, e.name);
      if (!idless.has(k)) continue;
      if (e.action === 'create') given.set(k, placeholderId(e.kind, e.name));
      if (e.action === 'adopt' && e.id) given.set(k, e.id);
    }
    if (given.size === granted.size && [...given].every(([k, id]) => granted.get(k) === id)) break;
    granted.clear();
    for (const [k, id] of given) granted.set(k, id);
  }
  return entries;
}
