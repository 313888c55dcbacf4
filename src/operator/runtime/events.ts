// Kubernetes Events for what a person running `kubectl describe` wants to see. Repeats
// of the same event within a window are dropped rather than spamming the API server. As
// client-go's broadcaster does, Events go out one at a time from a bounded queue: in a bulk
// apply they trail the objects' own writes instead of competing with them, and past the
// bound the oldest Normal ones are dropped.
import type { Logger } from 'pino';
import type { Kube, KubeObject } from './kube.ts';

const EVENTS = { group: '', version: 'v1', plural: 'events' };
/** client-go's queue length for its event broadcaster. */
const QUEUE_MAX = 1000;
type Pending = { ns: string; type: 'Normal' | 'Warning'; body: Record<string, unknown> };

export class EventRecorder {
  private readonly recent = new Map<string, number>();
  private readonly pending: Pending[] = [];
  private sending = false;
  /** Events dropped because the queue was full. */
  private dropped = 0;
  private readonly kube: Pick<Kube, 'create'>;
  private readonly log: Logger;
  private readonly instance: string;
  private readonly windowMs: number;
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
    this.windowMs = windowMs;
  }

  /** Events sent to the API server (Kubernetes writes that are not the objects'). */
  onRecord?: (reason: string) => void;

  record(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const key = `${obj.metadata.uid}|${reason}|${message}`;
    const now = Date.now();
    const last = this.recent.get(key);
    if (last && now - last < this.windowMs) return;
    this.recent.set(key, now);
    if (this.recent.size > 10_000)
      for (const [k, t] of this.recent) if (now - t > this.windowMs) this.recent.delete(k);
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
    this.pending.push(e);
    if (this.pending.length > QUEUE_MAX) {
      const i = this.pending.findIndex((p) => p.type === 'Normal');
      this.pending.splice(i === -1 ? 0 : i, 1);
      if (this.dropped++ % 100 === 0)
        this.log.warn(
          { dropped: this.dropped },
          'events are coming faster than the API server takes them; dropping',
        );
    }
    if (!this.sending) void this.send();
  }

  private async send(): Promise<void> {
    this.sending = true;
    try {
      for (let e = this.pending.shift(); e; e = this.pending.shift())
        await this.kube
          .create(EVENTS, e.ns, e.body)
          .catch((err: Error) => this.log.debug({ err: err.message }, 'could not record event'));
    } finally {
      this.sending = false;
    }
  }
}
