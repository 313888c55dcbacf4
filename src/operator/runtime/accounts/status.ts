// An account's status: its kstatus conditions, the URL it uses, the objects using it (a few
// named) and its last minute's requests; written only when something changed.
import type { Logger } from 'pino';
import { type Condition, conditionsFor, type Phase } from '../bindings/conditions.ts';
import type { Kube, KubeObject } from '../kube/kube.ts';
import { mergePatch } from '../kube/merge-patch.ts';
import { type AccountKind, type AccountStatusFields as AccountStatus, accountResource } from './kinds.ts';
import type { AccountRegistry } from './registry.ts';
import { accountId } from './resolve.ts';

/** Users named in status. */
const NAMES_SHOWN = 10;

export async function writeStatus(
  o: { kube: Kube; log: Logger; registry: AccountRegistry },
  kind: AccountKind,
  obj: KubeObject,
  phase: Phase,
  url: string | undefined,
  users: string[],
): Promise<void> {
  const id = accountId(kind, obj.metadata.namespace, obj.metadata.name);
  const old = (obj.status ?? {}) as AccountStatus & { conditions?: Condition[] };
  const next: AccountStatus & { conditions?: Condition[] } = {
    observedGeneration: obj.metadata.generation,
    conditions: conditionsFor(phase, obj.metadata.generation, old.conditions),
    ...(url ? { url } : {}),
    objects: { count: users.length, ...(users.length ? { names: users.slice(0, NAMES_SHOWN) } : {}) },
    lastMinute: o.registry.lastMinute(id),
  };
  const patch = mergePatch(old as Record<string, unknown>, next as Record<string, unknown>);
  if (Object.keys(patch).length === 0) return;
  if (phase.reason !== old.conditions?.find((c) => c.type === 'Ready')?.reason)
    o.log.info({ account: id, state: phase.state, reason: phase.reason, message: phase.message }, 'account');
  const updated = await o.kube.patch(
    accountResource(kind),
    obj.metadata.namespace,
    obj.metadata.name,
    { status: patch },
    'merge',
    'status',
  );
  obj.status = updated.status;
}
