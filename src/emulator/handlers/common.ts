// What several families share (as src/api/schemas/common.ts does for the wire): a reference
// that must name a record, labels that select, where the kinds of backend live.
import type { Ctx } from '../context.ts';
import type { EmulatorError } from '../errors.ts';

/** Every collection a backend id can live in (a route's backend module names any kind). */
export const BACKEND_COLLS = ['tunnelGroupBackends', 'weightedBackends', 'httpResponseBackends'];

/** Refuses with `refusal` unless a record of `coll` has this id. */
export function mustExist(ctx: Ctx, coll: string | string[], id: string, refusal: () => EmulatorError): void {
  const colls = Array.isArray(coll) ? coll : [coll];
  if (!colls.some((c) => ctx.store.get(c, id))) throw refusal();
}

/** A tunnel group backend's labels select a tunnel: every one of them (and at least one) on it. */
export const labelsMatch = (want: Record<string, string> | null, have: Record<string, string> | undefined) =>
  !!want && !!have && Object.keys(want).length > 0 && Object.entries(want).every(([k, v]) => have[k] === v);
