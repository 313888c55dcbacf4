// Status is a cache, never an authority: `status.account` and `status.id` are writable by
// anyone who may write status (a GitOps or CI service account with `*/status`).
import { describeAccount, forgedAccount } from '../accounts/resolve.ts';
import { CREATE_PENDING_ANNOTATION } from '../constants.ts';
import type { EventRecorder } from '../kube/events.ts';
import type { KubeObject } from '../kube/kube.ts';
import { type EngineAccounts, statusOf } from './types.ts';

/**
 * A `status.account` naming an account the object's namespace may not use was not written by
 * this operator (a status writer pointing the object at another account's resource). Its id is
 * not trusted either: on this copy of the object both go, and the object's own resource is
 * looked for by its owner marker in the account it resolves to, as after a create cut short;
 * the sync's status write puts the status right. A Warning Event names the field.
 */
export function distrustForgedStatus(accounts: EngineAccounts, events: EventRecorder, obj: KubeObject): void {
  const ns = obj.metadata.namespace ?? '';
  const forged = forgedAccount(statusOf(obj), (id) => accounts.mayHold(obj, id));
  if (!forged) return;
  events.record(
    obj,
    'Warning',
    'StatusCorrected',
    `status.account names ${describeAccount(forged)}, which namespace ${ns} may not use: not written by the operator, ignored with status.id; the object's resource is looked for by its owner marker`,
  );
  const status = obj.status as Record<string, unknown>;
  delete status.id;
  delete status.account;
  obj.metadata.annotations = { ...obj.metadata.annotations, [CREATE_PENDING_ANNOTATION]: 'true' };
}
