// Kubernetes Events for what a person running `kubectl describe` wants to see. Repeats
// of the same event within a window are dropped rather than spamming the API server. As
// client-go's broadcaster does, Events go out one at a time from a bounded queue: in a bulk
// apply they trail the objects' own writes instead of competing with them, and past the
// bound Normal ones are dropped. Namespaces take turns and share the bound: one namespace's
// bulk apply neither holds another's Events back nor has them dropped to make room for its own.
import { hash } from 'node:crypto';
import type { Logger } from 'pino';
import { FairQueue } from '../scheduler/fair-queue.ts';
import type { Kube, KubeObject } from './kube.ts';

const EVENTS = { group: '', version: 'v1', plural: 'events' };
/** client-go's queue length for its event broadcaster. */
const QUEUE_MAX = 1000;
/** Dedupe keys kept before the expired ones are pruned (and at least twice those left then). */
const RECENT_MAX = 10_000;
/**
 * A fingerprint of an Event's object, reason and message, what the dedupe keeps for each Event in
 * its window (thousands in a bulk apply) instead of the message itself: 72 bits, so two
 * different Events share one with a chance far below anything else that could lose an Event.
 */
const dedupeKey = (uid: string | undefined, reason: string, message: string): string =>
  hash('sha1', `${uid}|${reason}|${message}`, 'base64').slice(0, 12);
type Pending = { ns: string; type: 'Normal' | 'Warning'; body: Record<string, unknown> };

export class EventRecorder {
  private readonly recent = new Map<string, number>();
  private recentMax = RECENT_MAX;
  /** Waiting Events, each namespace's in order; the namespaces take turns. */
  private readonly pending = new FairQueue<Pending>();
  /** Normal Events waiting, by namespace: the bound drops from the namespace with the most. */
  private readonly normals = new Map<string, number>();
  private sending = false;
  /** Events dropped because the queue was full. */
  private dropped = 0;
  private readonly kube: Pick<Kube, 'create'>;
  private readonly log: Logger;
  private readonly instance: string;
  private readonly windowS: number;
  private readonly startedAt = Date.now();
  /** `edge-operator`, or `edge-operator/<instance>`: two installations' Events are told apart. */
  private readonly component: string;
  constructor(
    kube: Pick<Kube, 'create'>,
    log: Logger,
    identity: string,
    instance?: string,
    windowMs = 5 * 60_000,
  ) {
    this.kube = kube;
    this.log = log;
    this.instance = identity;
    this.component = instance ? `edge-operator/${instance}` : 'edge-operator';
    this.windowS = Math.ceil(windowMs / 1000);
  }

  /** Seconds since this recorder began: a small integer, kept inline in the dedupe map. */
  private secondsAt(now: number): number {
    return Math.floor((now - this.startedAt) / 1000);
  }

  /** Events sent to the API server (Kubernetes writes that are not the objects'). */
  onRecord?: (reason: string) => void;

  record(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const key = dedupeKey(obj.metadata.uid, reason, message);
    const now = Date.now();
    const at = this.secondsAt(now);
    const last = this.recent.get(key);
    if (last !== undefined && at - last < this.windowS) return;
    this.recent.set(key, at);
    // expired keys pruned in one pass once there are many, and not again before their number
    // doubles: a bulk apply of tens of thousands of objects keeps every key within the window,
    // and a pass per Event made it cost the square of the objects
    if (this.recent.size > this.recentMax) {
      for (const [k, t] of this.recent) if (at - t > this.windowS) this.recent.delete(k);
      this.recentMax = Math.max(RECENT_MAX, 2 * this.recent.size);
    }
    this.onRecord?.(reason);
    const ts = new Date(now).toISOString().replace(/\.\d+Z$/, 'Z');
    const ns = obj.metadata.namespace ?? 'default';
    this.enqueue({
      ns,
      type,
      body: {
        metadata: { generateName: `${obj.metadata.name}.`, namespace: ns },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: obj.metadata.name,
          namespace: ns,
          uid: obj.metadata.uid,
          resourceVersion: obj.metadata.resourceVersion,
        },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component: this.component },
        reportingComponent: 'edge.tunnel.dev/edge-operator',
        reportingInstance: this.instance,
        firstTimestamp: ts,
        lastTimestamp: ts,
        count: 1,
      },
    });
  }

  private enqueue(e: Pending): void {
    this.pending.push(e, 'high', e.ns);
    if (e.type === 'Normal') this.normals.set(e.ns, (this.normals.get(e.ns) ?? 0) + 1);
    if (this.pending.size > QUEUE_MAX) {
      this.take(this.dropOne());
      if (this.dropped++ % 100 === 0)
        this.log.warn(
          { dropped: this.dropped },
          'events are coming faster than the API server takes them; dropping',
        );
    }
    if (!this.sending) void this.send();
  }

  /**
   * What goes when the queue is full: the oldest Normal Event of the namespace with the most
   * waiting; only Warnings waiting, the oldest of the namespace with the most.
   */
  private dropOne(): Pending {
    let ns: string | undefined;
    for (const [n, c] of this.normals) if (ns === undefined || c > this.normals.get(ns)!) ns = n;
    if (ns !== undefined) for (const e of this.pending.flow('high', ns)) if (e.type === 'Normal') return e;
    let most: ReadonlySet<Pending> = new Set();
    for (const head of this.pending.heads('high')) {
      const flow = this.pending.flow('high', head.ns);
      if (flow.size > most.size) most = flow;
    }
    return most.values().next().value!;
  }

  /** Out of the queue, sent or dropped. */
  private take(e: Pending | undefined): Pending | undefined {
    if (!e) return undefined;
    this.pending.remove(e);
    if (e.type === 'Normal') {
      const left = (this.normals.get(e.ns) ?? 1) - 1;
      if (left) this.normals.set(e.ns, left);
      else this.normals.delete(e.ns);
    }
    return e;
  }

  /** The next Event to send: the oldest of the namespace whose turn it is. */
  private next(): Pending | undefined {
    return this.take(this.pending.shift());
  }

  private async send(): Promise<void> {
    this.sending = true;
    try {
      for (let e = this.next(); e; e = this.next())
        await this.kube
          .create(EVENTS, e.ns, e.body)
          .catch((err: Error) => this.log.debug({ err: err.message }, 'could not record event'));
    } finally {
      this.sending = false;
    }
  }
}
