// Leader election on a coordination.k8s.io Lease, as client-go does it: the leader renews
// every retry period; a candidate takes over once the holder has not renewed for a whole
// lease duration as observed on its own clock; a leader that cannot renew within the
// renew deadline steps down: a renewal still unanswered at the deadline is given up (a hung
// API server or connection must not keep a leader that a standby will replace once the lease
// runs out). On shutdown the lease is released so a standby takes over.
// A standby also watches the Lease: a release (a rolling upgrade, a drain) is taken within
// milliseconds by the replica that is already running, not at its next poll, by which time
// the replacement pod may have taken it with nothing warm.
import type { Logger } from 'pino';
import { keyAt } from './informer.ts';
import { isConflict, isKubeNotFound, type Kube, KubeError, type KubeObject } from './kube.ts';

const LEASES = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };

export interface LeaderOptions {
  kube: Kube;
  namespace: string;
  name: string;
  identity: string;
  log: Logger;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /**
   * How long the API server may refuse the Lease (401, 403) before it is taken as missing RBAC
   * and acquire() fails (RBAC applied with the pod settles sooner).
   */
  refusedForGoodMs?: number;
}

interface Lease {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

const micro = (d = new Date()) => d.toISOString().replace('Z', '000Z');
/**
 * Durations on a monotonic clock: a wall clock stepped back would keep a leader that should step
 * down, one stepped forward would let a standby take a lease still renewed.
 */
const elapsed = () => performance.now();

export class LeaderElector {
  private readonly opts: Required<LeaderOptions>;
  /** The holder's last renewal as this replica saw it, timed on this replica's clock. */
  private observed?: {
    holder: string | undefined;
    renewTime: string | undefined;
    at: number;
    durationMs: number;
  };
  private stopped = false;
  /** Since when the API server has refused the Lease (401, 403), and what it said. */
  private refusedSince?: number;
  private refusal?: string;
  /** The Lease's resourceVersion at the last attempt: where the standby's watch starts. */
  private leaseVersion?: string;
  /** The watch saw the Lease released (or deleted) since the last attempt. */
  private released = false;
  private wake?: () => void;
  private watching?: AbortController;
  isLeader = false;

  constructor(opts: LeaderOptions) {
    this.opts = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      refusedForGoodMs: 30_000,
      ...opts,
    };
  }

  /** Resolves once leadership is acquired; calls onLost if it is later lost. */
  async acquire(onLost: () => void): Promise<void> {
    try {
      while (!this.stopped) {
        this.released = false;
        if ((await this.tryAcquireOrRenew()) === true) {
          this.isLeader = true;
          // stopped (SIGTERM) while the acquiring request was in flight: hand the lease on at
          // once rather than leave it to a process that is going away
          if (this.stopped) {
            await this.release();
            return;
          }
          this.opts.log.info(
            { lease: keyAt(this.opts.namespace, this.opts.name), identity: this.opts.identity },
            'became leader',
          );
          void this.renewLoop(onLost);
          return;
        }
        // refused for good (no rights on leases): a standby that waits for ever would look
        // healthy and reconcile nothing; exiting says so where the pod's status shows it
        if (this.refusedSince !== undefined && elapsed() - this.refusedSince > this.opts.refusedForGoodMs)
          throw new Error(
            `leader election: the API server refuses the Lease ${keyAt(this.opts.namespace, this.opts.name)} (${this.refusal}): the leader-election Role must allow get, create, update and watch on leases`,
          );
        this.watchLease();
        await this.nextAttempt();
      }
    } finally {
      this.watching?.abort();
      this.watching = undefined;
    }
  }

  /**
   * The next retry period, or sooner: at once when the watch sees a release, and just after the
   * observed lease expires (the watch times every renewal), so that a crashed leader is replaced
   * within the lease duration of its last renewal rather than at the poll after it.
   */
  private nextAttempt(): Promise<void> {
    if (this.released || this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const retry = this.opts.retryPeriodMs * (1 + Math.random() * 0.2);
      const o = this.observed;
      const untilExpiry = o?.holder ? o.at + o.durationMs - elapsed() + 5 : Number.POSITIVE_INFINITY;
      const timer = setTimeout(done, Math.max(5, Math.min(retry, untilExpiry)));
      this.wake = done;
    });
  }

  private observe(s: Lease['spec']): void {
    if (
      !this.observed ||
      this.observed.renewTime !== s.renewTime ||
      this.observed.holder !== s.holderIdentity
    ) {
      const durationMs = (s.leaseDurationSeconds ?? this.opts.leaseDurationMs / 1000) * 1000;
      this.observed = { holder: s.holderIdentity, renewTime: s.renewTime, at: elapsed(), durationMs };
    }
  }

  /**
   * While standing by: one watch on the Lease (restarted when it ends), waking the wait when
   * the holder is emptied or the Lease deleted. Where the watch is refused (no `watch` on
   * leases in the Role) or fails, polling alone goes on as before.
   */
  private watchLease(): void {
    if (this.watching || !this.leaseVersion) return;
    const ctrl = new AbortController();
    this.watching = ctrl;
    const { kube, namespace, name, log } = this.opts;
    log.debug({ lease: keyAt(namespace, name) }, 'standing by: watching the lease');
    void (async () => {
      let rv = this.leaseVersion!;
      while (!ctrl.signal.aborted) {
        try {
          await kube.watch(
            LEASES,
            namespace,
            rv,
            (e) => {
              const o = e.object as KubeObject & Partial<Lease>;
              if (o.metadata?.resourceVersion) rv = o.metadata.resourceVersion;
              if (e.type === 'ERROR') rv = this.leaseVersion ?? rv; // 410: start again from the last poll's
              if (e.type === 'BOOKMARK' || e.type === 'ERROR' || o.metadata?.name !== name) return;
              // a Lease deleted by hand is no release: its holder may be alive and recreate it
              // at its next renewal; the lease is taken once what was seen of it expires
              if (e.type === 'DELETED') return;
              if (!o.spec?.holderIdentity) {
                this.released = true;
                this.wake?.();
              } else this.observe(o.spec);
            },
            {
              signal: ctrl.signal,
              idleMs: 3 * 60_000,
              timeoutSeconds: 300,
              fieldSelector: `metadata.name=${name}`,
            },
          );
        } catch (e) {
          if (ctrl.signal.aborted) return;
          log.debug({ err: (e as Error).message }, 'leader election: lease watch failed; polling meanwhile');
          rv = this.leaseVersion ?? rv;
          await new Promise((r) => setTimeout(r, this.opts.retryPeriodMs));
        }
      }
    })();
  }

  private async renewLoop(onLost: () => void): Promise<void> {
    let lastRenew = elapsed();
    while (!this.stopped && this.isLeader) {
      await new Promise((r) => setTimeout(r, this.opts.retryPeriodMs));
      if (this.stopped) return;
      const left = this.opts.renewDeadlineMs - (elapsed() - lastRenew);
      const renewed = left > 0 ? await this.tryAcquireOrRenew(AbortSignal.timeout(Math.ceil(left))) : false;
      if (renewed === true) {
        lastRenew = elapsed();
      } else if (renewed === 'taken') {
        // another replica holds it (it took the lease after a hand deletion, or a clock jump):
        // two leaders must not go on until the renew deadline
        this.isLeader = false;
        this.opts.log.error('lost leadership: another replica holds the lease');
        onLost();
        return;
      } else if (elapsed() - lastRenew >= this.opts.renewDeadlineMs) {
        this.isLeader = false;
        this.opts.log.error('lost leadership: could not renew the lease within the renew deadline');
        onLost();
        return;
      }
    }
  }

  /**
   * One attempt; `signal` gives a renewal up at the renew deadline. 'taken': this replica led,
   * and another holds the lease now.
   */
  private async tryAcquireOrRenew(signal?: AbortSignal): Promise<boolean | 'taken'> {
    const { kube, namespace, name, identity } = this.opts;
    const now = new Date();
    const mine = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.round(this.opts.leaseDurationMs / 1000),
      renewTime: micro(now),
    };
    try {
      let lease: Lease;
      try {
        lease = await kube.get<Lease>(LEASES, namespace, name, signal);
      } catch (e) {
        if (!isKubeNotFound(e)) throw e;
        // deleted by hand: a holder seen renewing it lately recreates it; taken only once what
        // was seen of it expires
        const o = this.observed;
        if (!this.isLeader && o?.holder && o.holder !== identity && elapsed() - o.at <= o.durationMs)
          return false;
        await kube.create(
          LEASES,
          namespace,
          { metadata: { name, namespace }, spec: { ...mine, acquireTime: micro(now), leaseTransitions: 0 } },
          signal,
        );
        return true;
      }
      this.leaseVersion = lease.metadata.resourceVersion;
      const s = lease.spec;
      this.observe(s);
      const held = !!s.holderIdentity && s.holderIdentity !== identity;
      if (held && this.isLeader) return 'taken';
      const expired = elapsed() - this.observed!.at > this.observed!.durationMs;
      if (held && !expired) return false;
      const spec =
        s.holderIdentity === identity
          ? { ...s, ...mine }
          : { ...s, ...mine, acquireTime: micro(now), leaseTransitions: (s.leaseTransitions ?? 0) + 1 };
      await kube.replace(LEASES, namespace, name, { ...lease, spec }, signal);
      return true;
    } catch (e) {
      if (!isConflict(e))
        this.opts.log.warn({ err: (e as Error).message }, 'leader election: lease update failed');
      const refused = e instanceof KubeError && (e.status === 401 || e.status === 403);
      this.refusedSince = refused ? (this.refusedSince ?? elapsed()) : undefined;
      if (refused) this.refusal = (e as Error).message;
      return false;
    }
  }

  /** Gives the lease up so a standby can take over at once. */
  async release(): Promise<void> {
    this.stopped = true;
    this.watching?.abort();
    this.wake?.();
    if (!this.isLeader) return;
    this.isLeader = false;
    try {
      const lease = await this.opts.kube.get<Lease>(LEASES, this.opts.namespace, this.opts.name);
      if (lease.spec.holderIdentity !== this.opts.identity) return;
      await this.opts.kube.replace(LEASES, this.opts.namespace, this.opts.name, {
        ...lease,
        spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: micro() },
      });
    } catch (e) {
      this.opts.log.warn({ err: (e as Error).message }, 'could not release the lease');
    }
  }
}
