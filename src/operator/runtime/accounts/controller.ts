// The account reconciler, beside the managed-resource engine: EdgeAccount and
// ClusterEdgeAccount objects into clients of the registry. It reads the key from its Secret,
// checks the URL against the allow-list, proves the key with one cheap request, writes the
// account's status (conditions, URL, objects using it, last minute's requests), and holds a
// finalizer while objects still need the account to delete their remote resources. A run
// gathers its facts, plans (plan.ts, pure) and carries the plan out; the loop is the one every
// reconciler runs (controller-loop.ts), the finalizer the one helper's (finalizer.ts).
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { type FinalizerEvent, finalizer } from '../kube/finalizer.ts';
import { Informer, type InformerOptions, keyAt } from '../kube/informer.ts';
import type { Kube, KubeObject } from '../kube/kube.ts';
import { type LoopOutcome, runLoop } from '../scheduler/controller-loop.ts';
import { WorkQueue } from '../scheduler/workqueue.ts';
import type { References } from '../state/references.ts';
import { connect, secretNamespace } from './connect.ts';
import { KeyHolds } from './key-hold.ts';
import { type AccountKind, type AccountSpec, accountResource } from './kinds.ts';
import type { AccountLimits } from './limits.ts';
import {
  ACCOUNT_WORKERS,
  type AccountConnection,
  type AccountOpening,
  type AccountPlan,
  openAccount,
  planAccount,
  type AccountFacts as RunFacts,
} from './plan.ts';
import { type Connected, KeyProbe } from './probe.ts';
import type { AccountRegistry } from './registry.ts';
import { type AccountFacts, accountFlow, accountId, accountRefKey, type Resolution } from './resolve.ts';
import { writeStatus } from './status.ts';
import { usersOf } from './users.ts';

const _SECRETS = { group: '', version: 'v1', plural: 'secrets' };
const NAMESPACES = { group: '', version: 'v1', plural: 'namespaces' };

export interface AccountControllerOptions {
  kube: Kube;
  log: Logger;
  registry: AccountRegistry;
  references: References;
  /** Namespaces watched for EdgeAccounts (undefined: all). */
  namespaces: (string | undefined)[];
  labelSelector?: string;
  informer?: Partial<InformerOptions>;
  installation: { enabled: boolean; url?: string; perMinute: number; namespace: string };
  allowedUrls: string[];
  /** Bounds on the EdgeAccounts tenants make (default: none). */
  limits?: AccountLimits;
  /** A managed object by kind and key (`ns/name`), from the informer caches. */
  lookup(kind: string, key: string): KubeObject | undefined;
  /** The account a managed object works with (held or resolved). */
  accountOf(obj: KubeObject): Resolution;
  /** Whether the object's status may name the account (else it was not written by the operator). */
  mayHold?(obj: KubeObject, id: string): boolean;
  /** The objects naming an account (`Kind/ns/name`) may go on: it turned Ready or changed. */
  wake(kind: AccountKind, obj: KubeObject): void;
  /** One managed object looks again, read afresh (its namespace's labels changed what it may use). */
  requeue(kind: string, key: string): void;
  /** Every cache has listed: a key Secret's hold, or a deleted account, may go (an object not yet seen may need it). */
  caughtUp?(): boolean;
  /** An account there at start has had its first check (its objects may go, ready or not). */
  firstChecked?(id: string): void;
}

type Spec = AccountSpec;

export class AccountController {
  readonly informers: Informer[];
  private readonly byKind: Map<AccountKind, Informer[]>;
  private readonly namespaceInformer: Informer;
  /**
   * Accounts take turns by namespace (a cluster account's turn is its own): a tenant's thousand
   * accounts on one Secret it keeps editing do not hold back another tenant's new account.
   */
  private readonly queue = new WorkQueue<string>({ name: 'account', flowOf: accountFlow });
  private readonly o: AccountControllerOptions;
  private readonly keyProbe: KeyProbe;
  /** The key Secrets held for a namespace's deletion. */
  readonly keys: KeyHolds;

  constructor(o: AccountControllerOptions) {
    this.o = o;
    this.keyProbe = new KeyProbe(o.registry);
    // a key refused by the API since it was checked: the account is looked at again
    o.registry.onRefused = (id) => this.queue.add(id);
    // an entry several accounts shared went or changed key: the others set their own
    o.registry.onUnshared = (ids) => {
      for (const id of ids) this.queue.add(id);
    };
    this.keys = new KeyHolds({ kube: o.kube, log: o.log });
    const informer = (
      plural: string,
      resource: { group: string; version: string; plural: string },
      ns?: string,
    ) =>
      new Informer({
        kube: o.kube,
        resource,
        namespace: ns,
        labelSelector: resource.group ? o.labelSelector : undefined,
        log: o.log.child({ informer: plural }),
        ...o.informer,
      });
    const edge = o.namespaces.map((ns) => informer('edgeaccounts', accountResource('EdgeAccount'), ns));
    const cluster = [informer('clusteredgeaccounts', accountResource('ClusterEdgeAccount'))];
    this.byKind = new Map([
      ['EdgeAccount', edge],
      ['ClusterEdgeAccount', cluster],
    ]);
    this.namespaceInformer = new Informer({
      kube: o.kube,
      resource: NAMESPACES,
      log: o.log.child({ informer: 'namespaces' }),
      metadataOnly: true,
      // the resourceVersion stays: a relist tells a changed namespace (its labels) by it
      transform: (n) => ({
        metadata: {
          name: n.metadata.name,
          labels: n.metadata.labels,
          resourceVersion: n.metadata.resourceVersion,
        },
      }),
      ...o.informer,
    });
    this.informers = [...edge, ...cluster, this.namespaceInformer];
  }

  /** What resolution reads, from these caches. */
  readonly facts = (installation: {
    enabled: boolean;
    adoptFrom?: string[];
    namespace: string;
  }): AccountFacts => ({
    installationEnabled: installation.enabled,
    installationAdoptFrom: installation.adoptFrom ?? [],
    operatorNamespace: installation.namespace,
    edgeAccountExists: (ns, name) => !!this.get(accountId('EdgeAccount', ns, name)),
    clusterAccount: (name) =>
      this.get(accountId('ClusterEdgeAccount', undefined, name))?.spec as unknown as Spec,
    namespaceLabels: (ns) => this.namespaceInformer.get(ns)?.metadata.labels ?? {},
  });

  /** A namespace's EdgeAccounts, from the cache. */
  private edgeAccountsIn(namespace: string): KubeObject[] {
    return (this.byKind.get('EdgeAccount') ?? []).flatMap((i) =>
      i.list().filter((o) => o.metadata.namespace === namespace),
    );
  }

  /** The account object of an identity, from the cache. */
  get(id: string): KubeObject | undefined {
    const [kind, a, b] = id.split('/') as [AccountKind, string, string | undefined];
    const key = b === undefined ? a : keyAt(a, b);
    for (const inf of this.byKind.get(kind) ?? []) {
      const o = inf.get(key);
      if (o) return o;
    }
    return undefined;
  }

  private resolveChecked!: () => void;
  /** Every account there at start has been checked once. */
  readonly checked = new Promise<void>((r) => {
    this.resolveChecked = r;
  });
  private resolveBegun!: () => void;
  /** The accounts there at start are known and their first checks begun (`checking` answers). */
  readonly begun = new Promise<void>((r) => {
    this.resolveBegun = r;
  });
  /** Accounts there at start whose first check has not ended. */
  private readonly firstChecks = new Set<string>();

  /**
   * Whether the account was there at start and is still being checked for the first time: its
   * objects wait for that, rather than report waiting for an account that is merely not looked
   * at yet; other accounts' objects do not (one hung API does not hold the others' start).
   */
  checking(id: string): boolean {
    return this.firstChecks.has(id);
  }

  start(): void {
    for (const [kind, infs] of this.byKind)
      for (const inf of infs) {
        inf.on((type, obj, old) => {
          const id = accountId(kind, obj.metadata.namespace, obj.metadata.name);
          // a delete too: its key Secret's hold goes
          if (type === 'delete') {
            void this.o.registry.remove(id);
            // a place under the namespace's account limit may have come free
            for (const o of kind === 'EdgeAccount' ? this.edgeAccountsIn(obj.metadata.namespace ?? '') : [])
              this.queue.add(accountId(kind, o.metadata.namespace, o.metadata.name));
            // names come and go (a tenant may make and delete accounts in a loop): nothing stays per name
            this.keyProbe.refusedAt.delete(id);
          }
          this.queue.add(id);
          // objects waiting for it to exist, or to admit them, look again; not at each status write
          if (type !== 'update' || obj.metadata.generation !== old?.metadata.generation)
            this.o.wake(kind, obj);
        });
        inf.start();
      }
    // a ClusterEdgeAccount that selects namespaces by label may admit a namespace now, or no
    // longer: that namespace's objects naming it look again (the others have nothing new)
    this.namespaceInformer.on((type, ns, old) => {
      if (type === 'update' && isDeepStrictEqual(ns.metadata.labels ?? {}, old?.metadata.labels ?? {}))
        return;
      const prefix = `${ns.metadata.name}/`;
      for (const a of this.byKind.get('ClusterEdgeAccount')?.flatMap((i) => i.list()) ?? []) {
        if (!(a.spec as unknown as Spec | undefined)?.namespaceSelector) continue;
        const id = accountId('ClusterEdgeAccount', undefined, a.metadata.name);
        for (const { kind, key } of this.o.references.dependentsOf(accountRefKey(id)!))
          if (key.startsWith(prefix)) this.o.requeue(kind, key);
      }
    });
    this.namespaceInformer.start();
    void Promise.all(this.informers.map((i) => i.synced))
      .then(() => {
        const ids = [...this.byKind].flatMap(([kind, infs]) =>
          infs.flatMap((i) => i.list().map((a) => accountId(kind, a.metadata.namespace, a.metadata.name))),
        );
        for (const id of ids) this.firstChecks.add(id);
        this.resolveBegun();
        return Promise.allSettled(
          ids.map((id) =>
            this.reconcile(id).finally(() => {
              this.firstChecks.delete(id);
              this.o.firstChecked?.(id);
            }),
          ),
        );
      })
      .finally(() => {
        this.resolveChecked();
        for (let i = 0; i < ACCOUNT_WORKERS; i++) void this.work(() => this.queue.get());
        void this.work(() => this.queue.getNewcomer());
      });
  }

  /** An object stopped using an account (`Kind/ns/name`): a delete held by it may go on. */
  unused(ref: string): void {
    const [kind, ns, name] = ref.split('/') as [AccountKind, string, string];
    const id = accountId(kind, ns, name);
    if (this.get(id)) this.queue.add(id);
  }

  /** An object of the account (an id) took its first remote resource: look now. */
  touched(id: string): void {
    if (this.get(id)) this.queue.add(id);
  }

  /** A key Secret changed: the accounts reading it look now (the next request uses the new key). */
  secretChanged(namespace: string, name: string): void {
    for (const [kind, infs] of this.byKind)
      for (const inf of infs)
        for (const a of inf.list()) {
          const ref = (a.spec as unknown as Spec).apiKeySecretRef;
          if (ref.name === name && secretNamespace(kind, a, this.o.installation.namespace) === namespace)
            this.queue.add(accountId(kind, a.metadata.namespace, a.metadata.name));
        }
  }

  /** A worker: the one controller loop (the queue ignores a requeue once it shuts down). */
  private work(next: () => Promise<string | undefined>): Promise<void> {
    return runLoop(this.queue, next, (id) => this.reconcile(id), {
      failed: (id, err) =>
        this.o.log.warn({ account: id, err: (err as Error).message }, 'account reconcile failed; will retry'),
    });
  }

  /** The objects using an account (users.ts). */
  usersOf(id: string): { names: string[]; holding: number } {
    return usersOf(this.o, id);
  }

  /**
   * One run: gather (the account, its users, its entry, its connection as a value) -> plan
   * (plan.ts) -> execute. The finalizer goes on before Apply, and off once Cleanup releases.
   */
  async reconcile(id: string): Promise<LoopOutcome> {
    const kind = id.split('/')[0] as AccountKind;
    const cached = this.get(id);
    if (!cached) {
      await this.open(id, kind, undefined, openAccount(this.gather(id, 'gone', { names: [], holding: 0 })));
      return {};
    }
    const obj = structuredClone(cached);
    const users = this.usersOf(id);
    const run = await finalizer(
      { kube: this.o.kube, resource: accountResource(kind) },
      obj,
      async (event) => {
        const facts = this.gather(id, event, users);
        const opening = openAccount(facts);
        await this.open(id, kind, obj, opening);
        const connection = opening.connect ? await this.connection(id, kind, obj, event) : {};
        const plan = planAccount(facts, connection);
        await this.execute(id, kind, obj, users, plan);
        return { value: plan.againMs, done: plan.release };
      },
    );
    // removed: its client goes after the finalizer, so a failed patch leaves it serving
    if (run.removed) await this.o.registry.remove(id);
    return run.value === undefined ? {} : { requeueAfterMs: run.value };
  }

  /** The facts a run reads from the registry and the caches before it writes. */
  private gather(id: string, event: RunFacts['event'], users: RunFacts['users']): RunFacts {
    const e = this.o.registry.get(id);
    return {
      event,
      users,
      entry: e && { usable: e.usable, verified: e.verified },
      caughtUp: this.o.caughtUp?.() ?? true,
    };
  }

  /** The connection as a value, and the entry right after it. */
  private async connection(
    id: string,
    kind: AccountKind,
    obj: KubeObject,
    event: FinalizerEvent,
  ): Promise<AccountConnection> {
    let connected: Connected | undefined;
    try {
      connected = await this.connect(id, kind, obj);
    } catch (err) {
      // a deleted account's proof is only a chance for its objects' deletes: tried at its next look
      if (event === 'apply') throw err;
    }
    const e = this.o.registry.get(id);
    return { connected, entry: e && { phase: e.phase, url: e.url } };
  }

  /** The opening's writes: a gone account's client, the key Secret's hold. */
  private async open(id: string, kind: AccountKind, obj: KubeObject | undefined, o: AccountOpening) {
    if (o.forget) await this.o.registry.remove(id);
    const gone = o.holdKey === 'gone';
    await this.holdKey(id, kind, gone ? undefined : obj, gone ? 0 : (o.holdKey as number));
  }

  /** The plan's writes (the finalizer's are the helper's). */
  private async execute(
    id: string,
    kind: AccountKind,
    obj: KubeObject,
    users: RunFacts['users'],
    plan: AccountPlan,
  ): Promise<void> {
    if (plan.mark) this.o.registry.mark(id, plan.mark.usable, plan.mark.phase);
    if (plan.wake) this.o.wake(kind, obj);
    if (plan.status) await writeStatus(this.o, kind, obj, plan.status.phase, plan.status.url, users.names);
  }

  /** The account's client from its Secret and URL; one cheap request when the key is new (connect.ts). */
  private connect(id: string, kind: AccountKind, obj: KubeObject): Promise<Connected> {
    return connect(
      {
        ...this.o,
        keyProbe: this.keyProbe,
        edgeAccountsIn: (ns) => this.edgeAccountsIn(ns),
        secretNamespace: (k, o) => secretNamespace(k, o, this.o.installation.namespace),
      },
      id,
      kind,
      obj,
    );
  }

  /** An EdgeAccount's key Secret held while its objects hold remote resources (key-hold.ts). */
  private async holdKey(id: string, kind: AccountKind, obj: KubeObject | undefined, holding: number) {
    if (kind !== 'EdgeAccount') return;
    const use = obj && {
      namespace: obj.metadata.namespace!,
      secret: (obj.spec as unknown as Spec).apiKeySecretRef.name,
      holding,
    };
    try {
      await this.keys.update(id, use, this.o.caughtUp?.() ?? true);
    } catch (err) {
      // the account serves all the same; only a restart during its namespace's deletion needs it
      this.o.log.warn({ account: id, err: (err as Error).message }, 'could not hold the key Secret');
    }
  }

  async stop(drainMs: number): Promise<void> {
    await this.queue.shutdown(drainMs);
    await this.keys.holds.unholdOnShutdown();
    for (const i of this.informers) i.stop();
  }
}
