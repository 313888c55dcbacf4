// Is any agent serving this right now? From one paged list of the account's online tunnels per
// interval (whatever the number of objects), each object of a kind that tunnels serve gets the
// count in status, a TunnelsOnline condition (apart from Ready: GitOps health does not move
// with agents) and an Event when it drops to zero or comes back. Status is written only when
// what it shows changes. Deciding is `tunnelStates` (pure); writing is `LiveTunnels.apply`.
import type { Logger } from 'pino';
import type { AnyBinding } from '../bindings/binding.ts';
import type { Condition } from '../bindings/conditions.ts';
import { managedResource } from '../constants.ts';
import type { EventRecorder } from '../kube/events.ts';
import { keyOf } from '../kube/informer.ts';
import type { Kube, KubeObject } from '../kube/kube.ts';

export interface OnlineTunnel {
  id: string;
  region: string;
  /** The backends the API says this tunnel serves. */
  backends?: { id: string }[];
}

export interface TunnelsOnline {
  count: number;
  /** The first few, for a person reading status. */
  tunnels?: { id: string; region: string }[];
}

/** Objects by kind, with their binding: what the informer caches hold. */
export type ObjectsByKind = { binding: AnyBinding; objects: KubeObject[] }[];

const SHOWN = 10;
/** An object by kind, namespace and name (`Kind/namespace/name`). */
const refOf = (kind: string, ns: string | undefined, name: string) => `${kind}/${ns ?? ''}/${name}`;

/**
 * What each object of a kind that tunnels serve should show: 'serves' kinds count the tunnels
 * whose backends name their remote id; 'through' kinds add up the objects they reference that
 * have a count (a cycle counts nothing twice).
 */
export function tunnelStates(kinds: ObjectsByKind, tunnels: OnlineTunnel[]): Map<string, TunnelsOnline> {
  const byBackend = new Map<string, OnlineTunnel[]>();
  for (const t of tunnels)
    for (const b of t.backends ?? []) byBackend.set(b.id, [...(byBackend.get(b.id) ?? []), t]);
  const objects = new Map<string, { binding: AnyBinding; obj: KubeObject }>();
  for (const { binding, objects: list } of kinds)
    if (binding.tunnels)
      for (const obj of list)
        objects.set(refOf(binding.kind, obj.metadata.namespace, obj.metadata.name), { binding, obj });
  // objects by the remote id they hold: a spec may name another object's resource by its id
  const byId = new Map<string, string>();
  for (const [key, { obj }] of objects) {
    const id = (obj.status as { id?: string } | undefined)?.id;
    if (id) byId.set(id, key);
  }
  const out = new Map<string, TunnelsOnline>();
  /** What cannot be counted here: a backend named by the id of nothing in the cluster, not a tunnel group. */
  const unknown = new Set<string>();
  // every tunnel, not just the few status shows: whoever references the object adds them up
  const all = new Map<string, OnlineTunnel[]>();
  const visiting = new Set<string>();
  const tunnelsOf = (key: string): OnlineTunnel[] | undefined => {
    const done = all.get(key);
    if (done) return done;
    const o = objects.get(key);
    if (!o || visiting.has(key)) return undefined;
    visiting.add(key);
    let found: OnlineTunnel[] = [];
    if (o.binding.tunnels === 'serves') {
      const id = (o.obj.status as { id?: string } | undefined)?.id;
      found = id ? (byBackend.get(id) ?? []) : [];
    } else {
      const seen = new Set<string>();
      const add = (ts: OnlineTunnel[] | undefined) => {
        for (const t of ts ?? [])
          if (!seen.has(t.id)) {
            seen.add(t.id);
            found.push(t);
          }
      };
      for (const r of o.binding.references?.(o.obj.spec ?? {}) ?? [])
        add(tunnelsOf(refOf(r.kind, o.obj.metadata.namespace, r.name)));
      // a backend given by its id: an object of this namespace's is followed; a tunnel group
      // no object manages has its tunnels listed by that id; anything else cannot be counted
      // here (another namespace's backend: its tunnels are that tenant's to see; another
      // account's weighted backend; an HTTP response backend, which needs no tunnel)
      const ns = o.obj.metadata.namespace ?? '';
      for (const { id, listed } of o.binding.tunnelIds?.(o.obj.spec ?? {}) ?? []) {
        const held = byId.get(id);
        if (held && objects.get(held)?.obj.metadata.namespace === ns) add(tunnelsOf(held));
        else if (!held && listed) add(byBackend.get(id));
        else if (!found.length) unknown.add(key);
      }
      if (found.length) unknown.delete(key);
    }
    visiting.delete(key);
    all.set(key, found);
    if (unknown.has(key)) return found;
    out.set(key, {
      count: found.length,
      ...(found.length
        ? { tunnels: found.slice(0, SHOWN).map((t) => ({ id: t.id, region: t.region })) }
        : {}),
    });
    return found;
  };
  for (const key of objects.keys()) tunnelsOf(key);
  return out;
}

/** The TunnelsOnline condition for a state. */
export function tunnelsCondition(
  s: TunnelsOnline,
  generation: number | undefined,
  previous?: Condition,
): Condition {
  const regions = [...new Set((s.tunnels ?? []).map((t) => t.region))].sort();
  const status = s.count > 0 ? 'True' : 'False';
  return {
    type: 'TunnelsOnline',
    status,
    reason: s.count > 0 ? 'TunnelsOnline' : 'NoTunnelsOnline',
    message:
      s.count > 0
        ? `${s.count} online tunnel${s.count === 1 ? '' : 's'} serve${s.count === 1 ? 's' : ''} it (${regions.join(', ')})`
        : 'no online tunnel serves it: its traffic fails until an agent with matching labels connects',
    observedGeneration: generation,
    lastTransitionTime:
      previous && previous.status === status
        ? previous.lastTransitionTime
        : new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  };
}

export class LiveTunnels {
  private readonly opts: {
    kube: Pick<Kube, 'patch'>;
    events: EventRecorder;
    log: Logger;
    /** The gauge per backend object. */
    gauge?: (namespace: string, name: string, kind: string, count: number | undefined) => void;
  };
  constructor(opts: LiveTunnels['opts']) {
    this.opts = opts;
  }

  /** Each account's tunnels to the objects that use that account (`inAccount`). */
  async applyByAccount(
    byAccount: Map<string, OnlineTunnel[]>,
    kinds: ObjectsByKind,
    inAccount: (obj: KubeObject, account: string) => boolean,
  ): Promise<void> {
    for (const [account, tunnels] of byAccount) {
      const mine = kinds.map((k) => ({ ...k, objects: k.objects.filter((o) => inAccount(o, account)) }));
      await this.apply(mine, tunnels);
    }
  }

  /** Writes what changed; returns how many objects' status was written. */
  async apply(kinds: ObjectsByKind, tunnels: OnlineTunnel[]): Promise<number> {
    const states = tunnelStates(kinds, tunnels);
    let written = 0;
    for (const { binding, objects } of kinds) {
      if (!binding.tunnels) continue;
      for (const obj of objects) {
        const s = states.get(refOf(binding.kind, obj.metadata.namespace, obj.metadata.name));
        if (!s) continue;
        // an object with nothing made yet (stalled, waiting, deleted) serves nothing yet either:
        // its own condition says why, not an alert on its tunnels
        if (obj.metadata.deletionTimestamp || !(obj.status as { id?: string } | undefined)?.id) continue;
        this.opts.gauge?.(obj.metadata.namespace!, obj.metadata.name, binding.kind, s.count);
        if (await this.write(binding, obj, s)) written++;
      }
    }
    return written;
  }

  private async write(binding: AnyBinding, obj: KubeObject, s: TunnelsOnline): Promise<boolean> {
    const status = (obj.status ?? {}) as { tunnelsOnline?: TunnelsOnline; conditions?: Condition[] };
    const previous = status.conditions?.find((c) => c.type === 'TunnelsOnline');
    const cond = tunnelsCondition(s, obj.metadata.generation, previous);
    const same =
      JSON.stringify(status.tunnelsOnline ?? null) === JSON.stringify(s) &&
      previous?.status === cond.status &&
      previous.message === cond.message;
    if (same) return false;
    try {
      await this.opts.kube.patch(
        managedResource(binding.plural),
        obj.metadata.namespace,
        obj.metadata.name,
        {
          // guarded: a reconcile's status write in between wins, this one comes again next interval
          metadata: { resourceVersion: obj.metadata.resourceVersion },
          status: {
            tunnelsOnline: s.tunnels ? s : { count: s.count, tunnels: null },
            conditions: [...(status.conditions ?? []).filter((c) => c.type !== 'TunnelsOnline'), cond],
          },
        },
        'merge',
        'status',
      );
    } catch (err) {
      this.opts.log.debug(
        { object: keyOf(obj), err: (err as Error).message },
        'tunnel status not written this time',
      );
      return false;
    }
    if (previous?.status !== cond.status && (previous || cond.status === 'False'))
      this.opts.events.record(obj, cond.status === 'True' ? 'Normal' : 'Warning', cond.reason, cond.message);
    return true;
  }
}
