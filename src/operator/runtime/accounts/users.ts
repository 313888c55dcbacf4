// The objects using an account, from the managed kinds' caches: those that work with it, and
// those whose status says they hold a resource in it (where the operator could have written that).
import { FINALIZER } from '../constants.ts';
import type { KubeObject } from '../kube/kube.ts';
import type { References } from '../state/references.ts';
import { accountRefKey, type Resolution } from './resolve.ts';

export interface UsersSource {
  references: References;
  lookup(kind: string, key: string): KubeObject | undefined;
  accountOf(obj: KubeObject): Resolution;
  mayHold?(obj: KubeObject, id: string): boolean;
}

/** The users' names (`Kind ns/name`, sorted), and how many hold remote resources (carry the finalizer). */
export function usersOf(o: UsersSource, id: string): { names: string[]; holding: number } {
  const names: string[] = [];
  let holding = 0;
  for (const { kind, key } of o.references.dependentsOf(accountRefKey(id)!)) {
    const obj = o.lookup(kind, key);
    if (!obj) continue;
    const r = o.accountOf(obj);
    const held = (obj.status as { account?: string; id?: string } | undefined)?.account;
    // a status naming the account counts only where the operator could have written it
    const forged = held === id && !(o.mayHold?.(obj, id) ?? true);
    if (!(r.ok && r.id === id) && (held !== id || forged)) continue;
    names.push(`${kind} ${key}`);
    if (obj.metadata.finalizers?.includes(FINALIZER)) holding++;
  }
  return { names: names.sort(), holding };
}
