// `edgectl export`: an account's resources as the custom resources that adopt them. Every
// kind is listed in pages (the bulk lists the operator observes with), each resource gets a
// stable readable name, ids of exported resources become references to those names, secret
// values become Secret key references, and the bindings' exportSpec turns the rest back into
// spec fields, so applying the result adopts everything without an API write.
import { stringify } from 'yaml';
import type { EdgeClient } from '../api/client.ts';
import { specSchema } from './kinds/crd.ts';
import { BINDINGS } from './kinds/index.ts';
import type { AnyBinding, ExportContext, RemoteBase } from './runtime/bindings/binding.ts';
import { decodeMetadata } from './runtime/bindings/owner.ts';
import { GROUP, ID_ANNOTATION, VERSION } from './runtime/constants.ts';
import type { KubeObject } from './runtime/kube/kube.ts';

export interface ExportOptions {
  /**
   * Written into every object; without it objects take the namespace they are applied to (with
   * ownedBy, the one each owner marker names).
   */
  namespace?: string;
  /**
   * The resources one installation of the operator manages (its cluster id), instead of those
   * no installation manages, each under the kind, namespace and name its owner marker gives:
   * applied where an operator runs with that cluster id, the objects adopt their resources
   * (disaster recovery without a copy in Git, or after an uninstall that retained them).
   */
  ownedBy?: string;
  /** Kinds to write (all by default); the others are still listed, to resolve references. */
  kinds?: string[];
  /** Write Secret manifests with the secret values the API returns. */
  includeSecrets?: boolean;
  /** Objects that only observe their resource (managementPolicy: Observe). */
  observe?: boolean;
  /** A line per kind listed, for long runs. */
  progress?: (line: string) => void;
  /** The account object the exported objects name (spec.accountRef): the one holding this key. */
  account?: { kind: 'EdgeAccount' | 'ClusterEdgeAccount'; name: string };
}

/** `--account Kind/name` (EdgeAccount or ClusterEdgeAccount): what spec.accountRef says. */
export function parseAccountRef(text: string): ExportOptions['account'] {
  const m = /^(EdgeAccount|ClusterEdgeAccount)\/([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/.exec(text);
  if (!m)
    throw new Error(
      `--account: ${JSON.stringify(text)} is not EdgeAccount/<name> or ClusterEdgeAccount/<name> (a Kubernetes object name)`,
    );
  return { kind: m[1] as 'EdgeAccount' | 'ClusterEdgeAccount', name: m[2]! };
}

export interface Skipped {
  kind: string;
  id: string;
  /** The installation (cluster id) and object whose owner marker the resource carries. */
  cluster: string;
  object: string;
}

export interface ExportResult {
  /** The custom resources, in the order of the kinds' list. */
  objects: KubeObject[];
  /** Secret manifests (only with includeSecrets). */
  secrets: KubeObject[];
  /** Secrets the objects reference, by name: the user creates them when includeSecrets is off. */
  secretNames: string[];
  skipped: Skipped[];
  /**
   * Objects written whose spec the CRD refuses (its bounds are below the API's in places, to
   * keep each create within the API's body limit): `kubectl apply` would refuse them.
   */
  refused: { kind: string; name: string; problem: string }[];
}

/** A lowercase RFC 1123 label from free text; '' when nothing usable is left. */
export function slug(text: string | undefined, max = 63): string {
  return (text ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, max)
    .replace(/-+$/, '');
}

/** Where an exported object goes: its kind, name and namespace (none: where it is applied). */
interface Place {
  kind: string;
  name: string;
  namespace?: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const OBJECT_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The namespace and name an owner marker gives, when it names this kind and both are valid. */
function markedPlace(
  kind: string,
  metadata: string | undefined,
): { namespace: string; name: string } | undefined {
  const [k, namespace, name, ...rest] = (decodeMetadata(metadata).owner?.object ?? '').split('/');
  if (k !== kind || rest.length || !DNS_LABEL.test(namespace ?? '') || !OBJECT_NAME.test(name ?? ''))
    return undefined;
  return { namespace: namespace!, name: name! };
}

const byAge = (a: RemoteBase, b: RemoteBase) =>
  (a.created_at ?? '').localeCompare(b.created_at ?? '') || a.id.localeCompare(b.id);

export async function exportAccount(api: EdgeClient, opts: ExportOptions = {}): Promise<ExportResult> {
  const unknown = (opts.kinds ?? []).filter((k) => !BINDINGS.some((b) => b.kind === k));
  if (unknown.length)
    throw new Error(`unknown kind ${unknown.join(', ')} (one of ${BINDINGS.map((b) => b.kind).join(', ')})`);
  const listed = new Map<AnyBinding, RemoteBase[]>();
  const skipped: Skipped[] = [];
  for (const b of BINDINGS) {
    const mine: RemoteBase[] = [];
    for await (const r of b.api.list(api, {}) as AsyncIterable<RemoteBase>) {
      const owner = decodeMetadata(r.metadata).owner;
      if (owner && owner.cluster === opts.ownedBy) mine.push(r);
      else if (owner) skipped.push({ kind: b.kind, id: r.id, cluster: owner.cluster, object: owner.object });
      else if (!opts.ownedBy) mine.push(r);
    }
    mine.sort(byAge);
    listed.set(b, mine);
    opts.progress?.(`${b.kind}: ${mine.length}`);
  }

  // names first, for every kind, so references resolve whatever the order
  const names = new Map<string, Place>();
  for (const [b, items] of listed) {
    const taken = new Set<string>();
    for (const r of items) {
      const marked = opts.ownedBy ? markedPlace(b.kind, r.metadata) : undefined;
      const namespace = opts.namespace ?? marked?.namespace;
      const base =
        marked?.name ||
        slug(r.description) ||
        `${b.kind.toLowerCase()}-${slug(r.id.replace(/^[a-z]+_/, ''), 40)}`;
      let name = base;
      for (let i = 2; taken.has(`${namespace}/${name}`); i++)
        name = `${base.slice(0, 60 - String(i).length)}-${i}`;
      taken.add(`${namespace}/${name}`);
      names.set(r.id, { kind: b.kind, name, namespace });
    }
  }

  const wanted = (kind: string) => !opts.kinds?.length || opts.kinds.includes(kind);
  const objects: KubeObject[] = [];
  const refused: ExportResult['refused'] = [];
  // by namespace and name: with ownedBy, objects of several namespaces
  const secrets = new Map<string, { namespace?: string; name: string; data: Record<string, string> }>();
  for (const [b, items] of listed) {
    if (!wanted(b.kind)) continue;
    for (const r of items) {
      const { name, namespace } = names.get(r.id)!;
      const secretName = `${b.kind.toLowerCase()}-${name}`;
      const x: ExportContext = {
        // a reference names an object of the same namespace; any other stays an id
        ref: (id) => {
          const to = names.get(id);
          return to && wanted(to.kind) && to.namespace === namespace ? to : undefined;
        },
        secret: (key, value) => {
          const at = `${namespace ?? ''}/${secretName}`;
          const held = secrets.get(at) ?? { namespace, name: secretName, data: {} };
          held.data[key] = value;
          secrets.set(at, held);
          return { name: secretName, key };
        },
      };
      const { user } = decodeMetadata(r.metadata);
      const spec = {
        ...(r.description ? { description: r.description } : {}),
        ...(user ? { metadata: user } : {}),
        ...b.exportSpec(r, x),
        ...(opts.observe ? { managementPolicy: 'Observe' } : {}),
        ...(opts.account ? { accountRef: opts.account } : {}),
      };
      const checked = specSchema(b).safeParse(spec);
      if (!checked.success) {
        const i = checked.error.issues[0]!;
        refused.push({ kind: b.kind, name, problem: `spec.${i.path.join('.')}: ${i.message}` });
      }
      objects.push({
        apiVersion: `${GROUP}/${VERSION}`,
        kind: b.kind,
        metadata: {
          name,
          ...(namespace ? { namespace } : {}),
          annotations: { [ID_ANNOTATION]: r.id },
        },
        spec,
      });
    }
  }
  const held = [...secrets.keys()].sort().map((k) => secrets.get(k)!);
  return {
    objects,
    secrets: opts.includeSecrets
      ? held.map(({ namespace, name, data }) => ({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name, ...(namespace ? { namespace } : {}) },
          type: 'Opaque',
          stringData: data,
        }))
      : [],
    // namespace/name where the namespaces are the markers' (several), else the name
    secretNames: held.map(({ namespace, name }) =>
      namespace && !opts.namespace ? `${namespace}/${name}` : name,
    ),
    skipped,
    refused,
  };
}

export const toYaml = (objs: KubeObject[]) =>
  objs.map((o) => `---\n${stringify(o, { lineWidth: 0 })}`).join('');

/** The names of the files an export writes for the kinds (a re-export may remove these, and only these). */
export const KIND_FILES = new Set(BINDINGS.map((b) => `${b.plural}.yaml`));

/**
 * The files of an export directory: one per kind, the Secrets, and a kustomization listing them
 * (`alsoListed`: files of the directory kept, listed in its kustomization too).
 */
export function exportFiles(result: ExportResult, alsoListed: string[] = []): Map<string, string> {
  const files = new Map<string, string>();
  if (result.secrets.length) files.set('secrets.yaml', toYaml(result.secrets));
  for (const b of BINDINGS) {
    const objs = result.objects.filter((o) => o.kind === b.kind);
    if (objs.length) files.set(`${b.plural}.yaml`, toYaml(objs));
  }
  files.set(
    'kustomization.yaml',
    stringify(
      {
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources: [...new Set([...files.keys(), ...alsoListed])],
      },
      { lineWidth: 0 },
    ),
  );
  return files;
}
