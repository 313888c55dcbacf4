// `edgectl trace`: an object and everything it uses, as a tree, and whether each is Ready.
// Pure: built from the namespace's objects (every managed kind, listed once), whether each
// referenced Secret exists, and optionally the live list of online tunnels; rendered to lines
// or JSON. Reading the cluster and the API is the command's (commands/trace.ts).

import { describeAccount, INSTALLATION } from '../operator/runtime/accounts/resolve.ts';
import type { AnyBinding } from '../operator/runtime/bindings/binding.ts';
import { PAUSED_ANNOTATION } from '../operator/runtime/constants.ts';
import type { KubeObject } from '../operator/runtime/kube/kube.ts';
import { type OnlineTunnel, tunnelStates } from '../operator/runtime/manager/live-tunnels.ts';
import { CliError, EXIT } from './io.ts';
import { age } from './output.ts';

export interface TraceNode {
  /** A managed kind, `Secret` or `Tunnel`. */
  kind: string;
  /** The object's name (a tunnel's id). */
  name: string;
  ready: boolean;
  /** The Ready condition's reason (`NotFound` when missing, `Exists` for a Secret, `Online` for a tunnel). */
  reason: string;
  message?: string;
  /** The remote resource's id (status.id). */
  id?: string;
  age?: string;
  /** The spec path of the reference that leads here from the parent. */
  via?: string;
  missing?: true;
  paused?: true;
  stalled?: true;
  reconciling?: true;
  deleting?: true;
  /** Seen above on its own path already: not expanded again. */
  cycle?: true;
  /** Online tunnels serving it, for kinds tunnels serve (live from the API, else from status). */
  tunnelsOnline?: number;
  /** A tunnel's region. */
  region?: string;
  /** A Secret's keys the parent uses (never their values). */
  keys?: string[];
  /**
   * The API account of the object (status.account, else what spec.accountRef names): on the
   * traced object unless it is the installation's, and below it where it differs (a reference
   * across accounts).
   */
  account?: string;
  children: TraceNode[];
}

export interface TraceTunnel extends OnlineTunnel {
  startedAt?: string;
}

export interface TraceInput {
  bindings: AnyBinding[];
  namespace: string;
  /** Every object of the namespace, by kind. */
  objects: Record<string, KubeObject[]>;
  /**
   * Referenced Secrets by name: 'Exists', 'NotFound', or why it could not be read
   * ('Forbidden'). A name not here is 'Unknown'.
   */
  secrets: Record<string, string>;
  /** The live list of online tunnels (GET /tunnels); without it, status.tunnelsOnline. */
  tunnels?: TraceTunnel[];
  now: number;
}

type Cond = { type: string; status: string; reason?: string; message?: string; observedGeneration?: number };
const conditionOf = (o: KubeObject, type: string) =>
  (o.status?.conditions as Cond[] | undefined)?.find((c) => c.type === type);

/** `KIND/NAME` by kind, plural, singular or short name (any case). */
export function parseTarget(arg: string, bindings: AnyBinding[]): { binding: AnyBinding; name: string } {
  const slash = arg.indexOf('/');
  if (slash <= 0 || slash === arg.length - 1)
    throw new CliError(`"${arg}": give the object as KIND/NAME (e.g. HTTPSEdge/app)`, EXIT.usage);
  const kind = arg.slice(0, slash).toLowerCase();
  const name = arg.slice(slash + 1);
  const binding = bindings.find((b) =>
    [b.kind, b.plural, ...b.shortNames].some((n) => n.toLowerCase() === kind),
  );
  if (!binding)
    throw new CliError(
      `unknown kind "${arg.slice(0, slash)}": use one of ${bindings
        .map((b) => `${b.kind} (${[b.plural, ...b.shortNames].join(', ')})`)
        .join(', ')}`,
      EXIT.usage,
    );
  return { binding, name };
}

/** The tree rooted at `kind/name`, or undefined when that object does not exist. */
export function buildTrace(input: TraceInput, kind: string, name: string): TraceNode | undefined {
  const byKind = new Map(input.bindings.map((b) => [b.kind, b]));
  const objects = new Map<string, KubeObject>();
  for (const [k, list] of Object.entries(input.objects))
    for (const o of list) objects.set(`${k}/${o.metadata.name}`, o);
  if (!objects.has(`${kind}/${name}`) || !byKind.has(kind)) return undefined;
  const live = input.tunnels
    ? tunnelStates(
        input.bindings.map((b) => ({ binding: b, objects: input.objects[b.kind] ?? [] })),
        input.tunnels,
      )
    : undefined;
  const refsOf = (b: AnyBinding, o: KubeObject) => b.references?.(o.spec ?? {}) ?? [];
  // objects never reconciled yet, oldest first: the operator serves a namespace's work in order
  // of arrival and namespaces in turns, so those ahead in this namespace say roughly how long
  const unreconciled = Object.values(input.objects)
    .flat()
    .filter((o) => !conditionOf(o, 'Ready'))
    .map((o) => `${o.metadata.creationTimestamp ?? ''} ${o.metadata.name}`)
    .sort();
  const waitingMessage = (o: KubeObject): string => {
    const ahead = unreconciled.indexOf(`${o.metadata.creationTimestamp ?? ''} ${o.metadata.name}`);
    if (ahead <= 0) return 'no Ready condition yet: is the operator running?';
    return `not reconciled yet: waiting for its turn behind ${ahead} object${ahead === 1 ? '' : 's'} of this namespace (namespaces take turns for the account's API budget: at 120 requests a minute, about ${Math.ceil(ahead / 2)} s or more)`;
  };

  const objectNode = (b: AnyBinding, o: KubeObject, via: string | undefined): TraceNode => {
    const status = (o.status ?? {}) as {
      id?: string;
      observedGeneration?: number;
      tunnelsOnline?: { count?: number; tunnels?: { id: string; region: string }[] };
    };
    const readyC = conditionOf(o, 'Ready');
    const observed = readyC?.observedGeneration ?? status.observedGeneration;
    const stale =
      readyC?.status === 'True' &&
      observed !== undefined &&
      o.metadata.generation !== undefined &&
      observed < o.metadata.generation;
    const node: TraceNode = {
      kind: b.kind,
      name: o.metadata.name,
      ready: readyC?.status === 'True' && !stale,
      reason: stale ? 'Progressing' : (readyC?.reason ?? 'Unknown'),
      ...(stale
        ? { message: `generation ${o.metadata.generation} not yet reconciled (Ready is of ${observed})` }
        : readyC?.message
          ? { message: readyC.message }
          : readyC
            ? {}
            : { message: waitingMessage(o) }),
      ...(status.id ? { id: status.id } : {}),
      ...(o.metadata.creationTimestamp ? { age: age(o.metadata.creationTimestamp, input.now) } : {}),
      ...(via ? { via } : {}),
      children: [],
    };
    if (conditionOf(o, 'Paused')?.status === 'True' || o.metadata.annotations?.[PAUSED_ANNOTATION] === 'true')
      node.paused = true;
    if (conditionOf(o, 'Stalled')?.status === 'True') node.stalled = true;
    if (stale || conditionOf(o, 'Reconciling')?.status === 'True') node.reconciling = true;
    if (o.metadata.deletionTimestamp) node.deleting = true;
    if (b.tunnels) {
      const count = live
        ? live.get(`${b.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`)?.count
        : status.tunnelsOnline?.count;
      if (count !== undefined) node.tunnelsOnline = count;
    }
    return node;
  };

  const tunnelNodes = (o: KubeObject): TraceNode[] => {
    const status = (o.status ?? {}) as { id?: string; tunnelsOnline?: { tunnels?: TraceTunnel[] } };
    const list = input.tunnels
      ? status.id
        ? input.tunnels.filter((t) => t.backends?.some((x) => x.id === status.id))
        : []
      : (status.tunnelsOnline?.tunnels ?? []);
    return [...list]
      .sort((a, b) => a.region.localeCompare(b.region) || a.id.localeCompare(b.id))
      .map((t) => ({
        kind: 'Tunnel',
        name: t.id,
        ready: true,
        reason: 'Online',
        region: t.region,
        ...(t.startedAt ? { age: age(t.startedAt, input.now) } : {}),
        children: [],
      }));
  };

  const secretNodes = (b: AnyBinding, o: KubeObject): TraceNode[] => {
    const keys = new Map<string, { path: string; keys: string[] }>();
    for (const s of b.secrets?.(o.spec ?? {}) ?? []) {
      const e = keys.get(s.name) ?? { path: s.path, keys: [] };
      if (!e.keys.includes(s.key)) e.keys.push(s.key);
      keys.set(s.name, e);
    }
    return [...keys].map(([secret, e]) => {
      const state = input.secrets[secret] ?? 'Unknown';
      return {
        kind: 'Secret',
        name: secret,
        ready: state === 'Exists',
        reason: state,
        ...(state === 'NotFound'
          ? { message: `no Secret "${secret}" in namespace ${input.namespace}`, missing: true as const }
          : {}),
        via: e.path,
        keys: e.keys,
        children: [],
      };
    });
  };

  /** An object's account as people name it ("EdgeAccount team/default"), when known. */
  const accountOf = (o: KubeObject): string | undefined => {
    const held = (o.status as { account?: string } | undefined)?.account;
    if (held) return describeAccount(held);
    const ref = (o.spec as { accountRef?: { kind: string; name: string } } | undefined)?.accountRef;
    return ref && `${ref.kind} ${ref.kind === 'EdgeAccount' ? `${o.metadata.namespace}/` : ''}${ref.name}`;
  };
  const visit = (
    k: string,
    n: string,
    via: string | undefined,
    path: Set<string>,
    parentAccount?: string,
  ): TraceNode => {
    const key = `${k}/${n}`;
    const b = byKind.get(k);
    const o = objects.get(key);
    if (!b || !o)
      return {
        kind: k,
        name: n,
        ready: false,
        reason: 'NotFound',
        message: `no ${k} "${n}" in namespace ${input.namespace}`,
        ...(via ? { via } : {}),
        missing: true,
        children: [],
      };
    const node = objectNode(b, o, via);
    const account = accountOf(o);
    if (account && account !== parentAccount) node.account = account;
    if (path.has(key)) return { ...node, cycle: true };
    path.add(key);
    const seen = new Set<string>();
    for (const r of refsOf(b, o)) {
      const rk = `${r.kind}/${r.name}`;
      if (r.kind === b.partOf || seen.has(rk)) continue;
      seen.add(rk);
      node.children.push(visit(r.kind, r.name, r.path, path, account));
    }
    // the objects that belong to this one (an edge's routes, a policy's rules)
    for (const part of input.bindings.filter((p) => p.partOf === k))
      for (const c of [...(input.objects[part.kind] ?? [])].sort((x, y) =>
        x.metadata.name.localeCompare(y.metadata.name),
      ))
        if (refsOf(part, c).some((r) => r.kind === k && r.name === n))
          node.children.push(visit(part.kind, c.metadata.name, undefined, path, account));
    node.children.push(...secretNodes(b, o));
    if (b.tunnels === 'serves') node.children.push(...tunnelNodes(o));
    path.delete(key);
    return node;
  };
  // the installation's own account is what everything used before accounts: not worth a note
  return visit(kind, name, undefined, new Set(), describeAccount(INSTALLATION));
}

/** Every node of the tree, depth first. */
export function* nodesOf(node: TraceNode): Generator<TraceNode> {
  yield node;
  for (const c of node.children) yield* nodesOf(c);
}

/** The names of the Secrets the tree references (to read their metadata, then build again). */
export const secretNamesOf = (node: TraceNode): string[] => [
  ...new Set([...nodesOf(node)].filter((n) => n.kind === 'Secret').map((n) => n.name)),
];

/** 0 when everything in the tree is Ready (each referenced Secret exists), else 1. */
export const traceExit = (node: TraceNode): number =>
  [...nodesOf(node)].every((n) => n.ready) ? EXIT.ok : EXIT.failed;

export type Tone = 'green' | 'yellow' | 'red';
/** Red: missing, stalled or not Ready; yellow: paused or reconciling; green: Ready. */
export function toneOf(n: TraceNode): Tone {
  if (n.missing || n.stalled) return 'red';
  if (n.paused || n.reconciling) return 'yellow';
  if (n.ready) return 'green';
  return n.reason === 'Unknown' ? 'yellow' : 'red';
}

const notesOf = (n: TraceNode): string =>
  [
    n.paused ? 'Paused' : '',
    n.deleting ? 'deleting' : '',
    n.cycle ? 'cycle (shown above)' : '',
    n.tunnelsOnline !== undefined ? `TunnelsOnline ${n.tunnelsOnline}` : '',
    n.region ? `region ${n.region}` : '',
    n.keys?.length ? `keys ${n.keys.join(',')}` : '',
    n.account ? `account ${n.account}` : '',
  ]
    .filter(Boolean)
    .join(', ');

const COLOURS: Record<Tone, string> = { green: '\x1b[32m', yellow: '\x1b[33m', red: '\x1b[31m' };
const RESET = '\x1b[0m';

/**
 * Aligned lines: NAME (the tree), READY, REASON, ID, AGE, NOTES. `tty`: tree connectors
 * (├─ └─ │) and, unless `colour` is false, READY and REASON coloured by `toneOf`.
 */
export function renderTree(root: TraceNode, o: { tty: boolean; colour?: boolean }): string {
  const colour = o.tty && o.colour !== false;
  const rows: { cells: string[]; tone: Tone }[] = [];
  const walk = (n: TraceNode, prefix: string, connector: string) => {
    rows.push({
      cells: [
        `${connector}${n.kind}/${n.name}`,
        n.missing ? 'Missing' : n.ready ? 'True' : 'False',
        n.reason,
        n.id ?? '',
        n.age ?? '',
        notesOf(n),
      ],
      tone: toneOf(n),
    });
    n.children.forEach((c, i) => {
      const last = i === n.children.length - 1;
      if (o.tty) walk(c, `${prefix}${last ? '   ' : '│  '}`, `${prefix}${last ? '└─ ' : '├─ '}`);
      else walk(c, `${prefix}   `, `${prefix}   `);
    });
  };
  walk(root, '', '');
  const head = ['NAME', 'READY', 'REASON', 'ID', 'AGE', 'NOTES'];
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => [...r.cells[i]!].length)));
  const line = (cells: string[], tone?: Tone) =>
    cells
      .map((c, i) => {
        const padded = i === cells.length - 1 ? c : c + ' '.repeat(width[i]! - [...c].length);
        return tone && colour && (i === 1 || i === 2) ? `${COLOURS[tone]}${padded}${RESET}` : padded;
      })
      .join('   ')
      .trimEnd();
  return `${[line(head), ...rows.map((r) => line(r.cells, r.tone))].join('\n')}\n`;
}

export const renderJson = (root: TraceNode): string => `${JSON.stringify(root, null, 2)}\n`;
