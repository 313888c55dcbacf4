// Tunnel group and weighted backends (src/api/schemas/backends.ts).
import { ID_PREFIX } from '../../api/limits.ts';
import { type Ctx, ref } from '../context.ts';
import { badRequest, refuse } from '../errors.ts';
import type { Rec } from '../store.ts';
import { BACKEND_COLLS, labelsMatch, mustExist } from './common.ts';
import type { Family } from './crud.ts';

/** Ids of the other kinds of backend (a path id of one of them is the wrong kind: ERR_NGROK_6527). */
const wrongBackendKind = (prefix: string, type: string) => (id: string) =>
  [ID_PREFIX.tunnelGroupBackend, ID_PREFIX.weightedBackend, ID_PREFIX.httpResponseBackend].some(
    (p) => p !== prefix && id.startsWith(`${p}_`),
  )
    ? refuse('ERR_BACKEND_ID_WRONG_KIND', { ID: id, BACKENDTYPE: type })
    : undefined;
/** A backend a weighted backend uses cannot be deleted (ERR_NGROK_6502). */
function backendUnused(ctx: Ctx, rec: Rec): void {
  const users = ctx.store
    .all('weightedBackends')
    .filter((w) => w.id !== rec.id && Object.hasOwn((w.backends ?? {}) as object, rec.id));
  if (users.length)
    throw refuse('ERR_BACKEND_IN_USE', {}, `${rec.id} is used by ${users.map((u) => u.id).join(', ')}`);
}
/** A weighted backend's key names a backend (ERR_NGROK_6501). */
const backendExists = (ctx: Ctx, id: string) =>
  mustExist(ctx, BACKEND_COLLS, id, () => refuse('ERR_BACKEND_NOT_FOUND', { ID: id }, 'backends'));

const tunnelGroupBackends: Family = {
  path: '/backends/tunnel_group',
  coll: 'tunnelGroupBackends',
  prefix: ID_PREFIX.tunnelGroupBackend,
  listKey: 'backends',
  what: 'tunnel group backend',
  badId: wrongBackendKind(ID_PREFIX.tunnelGroupBackend, 'tunnel group'),
  beforeDelete: backendUnused,
  create: (_ctx, b) => ({ labels: b.labels }),
  update: (_ctx, rec, b) => {
    if (b.labels !== undefined) rec.labels = b.labels;
  },
  render: (ctx, rec) => ({
    tunnels: ctx.store
      .all('tunnels')
      .filter((t) => labelsMatch(rec.labels as Record<string, string>, t.labels as Record<string, string>))
      .map((t) => ref(ctx, t.id)),
  }),
};

const weightedBackends: Family = {
  path: '/backends/weighted',
  coll: 'weightedBackends',
  prefix: ID_PREFIX.weightedBackend,
  listKey: 'backends',
  what: 'weighted backend',
  badId: wrongBackendKind(ID_PREFIX.weightedBackend, 'weighted'),
  beforeDelete: backendUnused,
  create: (ctx, b) => {
    for (const id of Object.keys(b.backends as object)) backendExists(ctx, id);
    return { backends: b.backends };
  },
  update: (ctx, rec, b) => {
    if (b.backends === undefined) return;
    for (const id of Object.keys(b.backends as object)) {
      if (id === rec.id) throw badRequest('ERR_BACKEND_CYCLE', `backends: ${id} cannot point at itself`);
      backendExists(ctx, id);
    }
    rec.backends = b.backends;
  },
};

/** By the operations table's group. */
export const BACKEND_FAMILIES = { tunnelGroupBackends, weightedBackends };
