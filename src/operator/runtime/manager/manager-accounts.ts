// The manager's side of accounts: which account an object works with, each account's client
// and bulk observations for the engines, the account reconciler, and the cap on how many of
// one account's objects a kind's workers take at once.
import type { Logger } from 'pino';
import { AccountController } from '../accounts/controller.ts';
import type { AccountKind, AccountRef } from '../accounts/kinds.ts';
import type { AccountLimits } from '../accounts/limits.ts';
import type { AccountEntry, AccountRegistry } from '../accounts/registry.ts';
import {
  accountFlow,
  accountId,
  effectiveAccount,
  INSTALLATION,
  mayAdopt,
  mayHold,
  mayUse,
  type Resolution,
  resolveAccount,
} from '../accounts/resolve.ts';
import type { EngineAccounts } from '../engine/index.ts';
import type { KubeObject } from '../kube/kube.ts';
import type { Budget } from '../scheduler/budget.ts';
import { accountCap, admission } from '../scheduler/policy.ts';
import type { Priority } from '../scheduler/priority.ts';
import type { QueueOptions } from '../scheduler/workqueue.ts';
import { type Observer, refreshAll } from '../state/observer.ts';
import type { References } from '../state/references.ts';
import type { Dispatch } from './dispatch.ts';
import type { Controller } from './worker.ts';

export interface AccountsOptions {
  registry: AccountRegistry;
  /**
   * The installation's own account: on, its URL (the default of accounts' apiURL), its budget,
   * the operator's namespace, and the namespaces that may adopt in it (default: the operator's).
   */
  installation: {
    enabled: boolean;
    url?: string;
    perMinute: number;
    namespace: string;
    adoptFrom?: string[];
  };
  /** apiURLs accounts may use besides the installation's. */
  allowedUrls: string[];
  /** Bounds on the EdgeAccounts tenants make. */
  limits?: AccountLimits;
}

/** Marks the lane of an account's objects that wait for their kind's first list. */
const LIST_LANE = '\u0000list';

export class ManagerAccounts {
  /** The account reconciler, once started. */
  ctl?: AccountController;
  private readonly o: {
    accounts: AccountsOptions;
    controllers: Map<string, Controller>;
    references: References;
    dispatch: () => Dispatch;
    log: Logger;
    /** Workers per kind besides the urgent and newcomer ones. */
    concurrency: number;
    /** Every cache listed and every account checked once (key holds are let go only then). */
    caughtUp: () => boolean;
  };

  constructor(o: ManagerAccounts['o']) {
    this.o = o;
    o.accounts.registry.onRoom = () => this.wakeAll();
  }

  /** Where the next wake starts: the kinds take turns at the room an account's budget has. */
  private firstKind = 0;

  /**
   * What an account's objects waited for is there (room in its budget, a 429's wait over, its
   * first check, its first lists, its entry changed or gone): each kind's queue hands out what
   * it kept back. Every input of `admission` changes only where one of these events follows.
   */
  private wakeAll(): void {
    const cs = [...this.o.controllers.values()];
    if (!cs.length) return;
    this.firstKind = (this.firstKind + 1) % cs.length;
    for (let i = 0; i < cs.length; i++) cs[(this.firstKind + i) % cs.length]!.queue.wake();
  }

  /** An account's first lists after a start, once it can serve (see startLists). */
  private listFirst?: (id: string) => void;

  /**
   * After a start, each account lists the kinds its objects use (one list each, not a GET per
   * object) as soon as it can serve: at once if it needs no check (the installation's), else once
   * its first check is done. Only that account's objects wait for its lists (`deferred`): an
   * account slow to serve, or whose API hangs, holds no other account's start.
   */
  startLists(): void {
    const kinds = new Map<string, Set<Controller>>();
    for (const c of this.o.controllers.values())
      for (const i of c.informers)
        for (const o of i.list()) {
          const r = this.accountOf(o);
          if (!r.ok) continue;
          const set = kinds.get(r.id) ?? new Set<Controller>();
          kinds.set(r.id, set.add(c));
        }
    this.listFirst = (id) => {
      const cs = kinds.get(id);
      kinds.delete(id);
      if (!cs || !this.registry.get(id)?.usable) return;
      const observers = [...cs].flatMap((c) => {
        const o = this.registry.observer(id, c.binding.kind);
        return o ? [o] : [];
      });
      // each pass's end wakes the queues (the observer's `listed`)
      void refreshAll(observers);
    };
    for (const id of [...kinds.keys()]) if (!this.ctl!.checking(id)) this.listFirst(id);
  }

  /** An account there at start has had its first check: its objects may go, after its lists. */
  private firstChecked(id: string): void {
    this.listFirst?.(id);
    this.wakeAll();
  }

  get registry(): AccountRegistry {
    return this.o.accounts.registry;
  }

  /** The installation's own account, when it is on. */
  get installation(): AccountEntry | undefined {
    return this.registry.get(INSTALLATION);
  }

  /** The account an object works with now (held or resolved), or why none. */
  accountOf = (obj: KubeObject): Resolution => {
    const facts = this.ctl!.facts(this.o.accounts.installation);
    const ns = obj.metadata.namespace ?? '';
    const spec = obj.spec as { accountRef?: AccountRef } | undefined;
    return effectiveAccount(
      (obj.status ?? {}) as { id?: string; account?: string },
      resolveAccount(ns, spec?.accountRef, facts),
      (id) => this.mayHold(obj, id),
    );
  };

  /** Whether the object's status may name account `id` (resolve.ts mayHold). */
  mayHold = (obj: KubeObject, id: string): boolean =>
    mayHold(
      id,
      obj.metadata.namespace ?? '',
      (obj.spec as { accountRef?: AccountRef } | undefined)?.accountRef,
      this.ctl!.facts(this.o.accounts.installation),
    );

  /** Whether objects of `namespace` may use account `id` (what status.account may name). */
  mayUse = (id: string, namespace: string): boolean =>
    mayUse(id, namespace, this.ctl!.facts(this.o.accounts.installation));

  /** Whether objects of `namespace` may take or read what no object of theirs made in account `id`. */
  mayAdopt = (id: string, namespace: string): boolean =>
    mayAdopt(id, namespace, this.ctl!.facts(this.o.accounts.installation));

  /** Whether the object works with this account now (or with one sharing its entry: the same key). */
  uses(obj: KubeObject, id: string): boolean {
    const r = this.accountOf(obj);
    return r.ok && (r.id === id || this.registry.holderOf(r.id) === this.registry.holderOf(id));
  }

  engineAccounts(): EngineAccounts {
    const registry = this.registry;
    return {
      accountOf: this.accountOf,
      mayUse: this.mayUse,
      mayHold: this.mayHold,
      mayAdopt: this.mayAdopt,
      use: (id, kind, forDelete) => {
        const u = registry.use(id, forDelete);
        return 'phase' in u ? u : { client: u.client, observer: registry.observer(id, kind) };
      },
    };
  }

  start(o: {
    kube: ConstructorParameters<typeof AccountController>[0]['kube'];
    namespaces: (string | undefined)[];
    labelSelector: string;
    informer: ConstructorParameters<typeof AccountController>[0]['informer'];
  }): void {
    const a = this.o.accounts;
    this.ctl = new AccountController({
      ...o,
      log: this.o.log,
      registry: a.registry,
      references: this.o.references,
      installation: a.installation,
      allowedUrls: a.allowedUrls,
      limits: a.limits,
      lookup: (kind, key) => this.o.controllers.get(kind)?.engine.opts.cache.get(key),
      accountOf: this.accountOf,
      mayHold: this.mayHold,
      wake: (kind, obj) => void this.wake(kind, obj),
      requeue: (kind, key) => {
        const c = this.o.controllers.get(kind);
        c?.engine.readAfresh(key);
        c?.queue.add(key);
      },
      caughtUp: this.o.caughtUp,
      firstChecked: (id) => this.firstChecked(id),
    });
    this.ctl.start();
  }

  /**
   * An account turned Ready or changed: its kinds are listed first (so its objects are compared
   * with one list, not a GET each), then every object naming it looks again.
   */
  private async wake(kind: string, account: KubeObject): Promise<void> {
    const registry = this.registry;
    const id = accountId(kind as AccountKind, account.metadata.namespace, account.metadata.name);
    if (registry.get(id)?.usable)
      await refreshAll(
        [...this.o.controllers.values()].flatMap((c) => {
          const o = c.informers.some((i) => i.list().some((x) => this.uses(x, id)))
            ? registry.observer(id, c.binding.kind)
            : undefined;
          return o ? [o] : [];
        }),
      );
    this.o.dispatch().enqueueDependents(kind, account);
  }

  /** The bulk observations a kind's objects need: one per account they use (that can serve). */
  observersOf(c: Controller): Observer[] {
    const ids = new Set<string>();
    for (const i of c.informers)
      for (const o of i.list()) {
        const r = this.accountOf(o);
        if (r.ok) ids.add(r.id);
      }
    return [...ids].flatMap((id) => {
      const o = this.registry.get(id)?.usable ? this.registry.observer(id, c.binding.kind) : undefined;
      return o ? [o] : [];
    });
  }

  /**
   * A kind's queue takes at most concurrency - 1 objects of one account at a time while there is
   * more than one account: an account whose API hangs (each request waits out --api-timeout)
   * never holds every worker, so the other accounts' objects, in the same namespace too, keep
   * going. With one account there is nobody to keep a worker for. A namespace's own accounts
   * share one cap: a tenant that makes several hung accounts still holds no more workers than
   * one would. An account slow to serve (a low rateLimitPerMinute) holds none while its objects
   * wait for its budget (runWorker). An object not begun stays queued (`deferred`) while its
   * account's budget has callers enough waiting, and after a start while its account has its
   * first check, or, if the object has a remote resource to compare, the first list of its kind.
   */
  queueCap(
    kind: string,
    object: (key: string) => KubeObject | undefined,
  ): Pick<QueueOptions, 'accountOf' | 'maxPerAccount' | 'laneOf' | 'deferred' | 'onBegin' | 'onDone'> {
    const accountOf = (obj: KubeObject | undefined) => {
      const r = obj && this.ctl ? this.accountOf(obj) : undefined;
      return r?.ok ? r.id : undefined;
    };
    const idOf = (lane: string) => (lane.endsWith(LIST_LANE) ? lane.slice(0, -LIST_LANE.length) : lane);
    // the seat each run in progress holds, in the budget it began with (a changed one is a new budget)
    const seated = new Map<string, { budget: Budget; priority: Priority }>();
    return {
      onBegin: (key, lane, priority) => {
        const budget = lane ? this.registry.get(idOf(lane))?.budget : undefined;
        if (!budget) return;
        budget.seat(priority, 1);
        seated.set(key, { budget, priority });
      },
      onDone: (key) => {
        const s = seated.get(key);
        if (!s) return;
        seated.delete(key);
        s.budget.seat(s.priority, -1);
      },
      accountOf: (key) => {
        const id = accountOf(object(key));
        return id === undefined ? undefined : accountFlow(id);
      },
      maxPerAccount: () => accountCap(this.o.concurrency, this.registry.size),
      // an object with a remote resource to compare waits for its kind's first list (an edit
      // or a delete reads its own resource): a lane of its own while that list is under way
      laneOf: (key, priority) => {
        const obj = object(key);
        const id = accountOf(obj);
        if (id === undefined) return '';
        const listing =
          priority !== 'urgent' &&
          !!(obj!.status as { id?: string } | undefined)?.id &&
          !!this.registry.get(id)?.observers.get(kind)?.firstListing;
        return listing ? `${id}${LIST_LANE}` : id;
      },
      deferred: (lane, priority, newcomer) => {
        if (lane === '') return false;
        const list = lane.endsWith(LIST_LANE);
        const id = idOf(lane);
        const e = this.registry.get(id);
        const starting = this.ctl!.checking(id);
        if (!e && !starting) return false;
        return admission({
          priority,
          newcomer,
          accountStarting: starting,
          kindListing: list && !!e?.observers.get(kind)?.firstListing,
          hasId: list,
          throttled: !!e?.budget.throttledNow,
          waiting: e?.budget.seatsFor(priority) ?? 0,
          room: e?.budget.room ?? Number.POSITIVE_INFINITY,
        });
      },
    };
  }
}
