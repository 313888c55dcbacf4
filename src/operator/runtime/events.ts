// Kubernetes Events for what a person running `kubectl describe` wants to see. Repeats
// of the same event within a window are dropped rather than spamming the API server.
import type { Logger } from 'pino';
import type { Kube, KubeObject } from './kube.ts';

const EVENTS = { group: '', version: 'v1', plural: 'events' };

export class EventRecorder {
  private readonly recent = new Map<string, number>();
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
    void this.kube
      .create(EVENTS, ns, {
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
      })
      .catch((err: Error) => this.log.debug({ err: err.message }, 'could not record event'));
  }
}
