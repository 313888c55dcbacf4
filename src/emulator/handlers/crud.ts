// The generic CRUD of a resource family: create, list (a page), get, update, delete over one
// collection. A family (one file beside this, as src/api/schemas/) only says how its input is
// checked against the store and how a stored record is returned.
import { type Ctx, iso, uriOf } from '../context.ts';
import { type EmulatorError, notFound, refuse } from '../errors.ts';
import { applyFilter } from '../filter.ts';
import { newId } from '../ids.ts';
import type { Rec } from '../store.ts';

export type Body = Record<string, unknown>;
export interface Result {
  status: number;
  body?: unknown;
}
export type Handler = (
  ctx: Ctx,
  params: Record<string, string>,
  body: Body,
  query: Record<string, string>,
) => Promise<Result> | Result;

export interface Family {
  /** The collection path of the operations table (`/ip_policies`). */
  path: string;
  coll: string;
  prefix: string;
  listKey: string;
  what: string;
  /** Checks references and returns the fields to store (without id/created_at). */
  create(ctx: Ctx, body: Body): Promise<Body> | Body;
  update?(ctx: Ctx, rec: Rec, body: Body): void;
  render?(ctx: Ctx, rec: Rec): Body;
  beforeDelete?(ctx: Ctx, rec: Rec): void;
  afterDelete?(ctx: Ctx, rec: Rec): void;
  /** The API's refusal of an update that sends no field, where it has one. */
  emptyUpdate?: string;
  /** The API's refusal of an id in the path it cannot be (another kind's), where it has one. */
  badId?(id: string): EmulatorError | undefined;
}

/** The fields every resource has, from a create body. */
export const common = (b: Body) => ({ description: b.description ?? '', metadata: b.metadata ?? '' });
/** The fields a body sends (an update leaves the others as they are). */
export const defined = (b: Body) => Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined));

/** A page of a list endpoint: newest first, `limit`, `before_id` and `filter` as the API has them. */
export function page(
  ctx: Ctx,
  path: string,
  key: string,
  items: Body[],
  query: Record<string, string>,
): Result {
  const limit = Math.min(100, Math.max(1, Number(query.limit) || 100));
  const sorted = applyFilter(items, query.filter).sort((a, b) =>
    (a.id as string) < (b.id as string) ? 1 : -1,
  );
  const start = query.before_id ? sorted.filter((x) => (x.id as string) < query.before_id!) : sorted;
  const slice = start.slice(0, limit);
  const more = start.length > limit;
  const filter = query.filter === undefined ? '' : `&filter=${encodeURIComponent(query.filter)}`;
  return {
    status: 200,
    body: {
      [key]: slice,
      uri: `${ctx.origin}${path}`,
      next_page_uri: more
        ? `${ctx.origin}${path}?limit=${limit}&before_id=${slice.at(-1)!.id}${filter}`
        : null,
    },
  };
}

/** A family's record by the id in a path: the family's refusal of an id it cannot be, or not found. */
export const loader =
  (f: Pick<Family, 'coll' | 'what' | 'badId'>) =>
  (ctx: Ctx, id: string): Rec => {
    const bad = f.badId?.(id);
    if (bad) throw bad;
    const rec = ctx.store.get(f.coll, id);
    if (!rec) throw notFound(f.what, id);
    return rec;
  };

/** The operations of a family: `create`, `list`, `get`, `update`, `delete`. */
export function crud(f: Family): Record<string, Handler> {
  const render = (ctx: Ctx, rec: Rec) => {
    const { _owner, ...rest } = rec as Rec & { _owner?: unknown };
    return { ...rest, uri: uriOf(ctx, rec.id), ...(f.render?.(ctx, rec) ?? {}) };
  };
  const load = loader(f);
  return {
    create: async (ctx, _p, body) => {
      const fields = await f.create(ctx, body);
      const rec = ctx.store.put(f.coll, {
        id: newId(f.prefix, ctx.now()),
        created_at: iso(ctx.now()),
        ...common(body),
        ...fields,
      });
      return { status: 201, body: render(ctx, rec) };
    },
    list: (ctx, _p, _b, q) =>
      page(
        ctx,
        f.path,
        f.listKey,
        ctx.store.all(f.coll).map((r) => render(ctx, r)),
        q,
      ),
    get: (ctx, p) => ({ status: 200, body: render(ctx, load(ctx, p.id!)) }),
    update: (ctx, p, body) => {
      const rec = { ...load(ctx, p.id!) };
      if (f.emptyUpdate && Object.keys(body).length === 0) throw refuse(f.emptyUpdate, {}, rec.id);
      f.update?.(ctx, rec, body);
      const { description, metadata } = body;
      Object.assign(rec, defined({ description, metadata }));
      ctx.store.put(f.coll, rec);
      return { status: 200, body: render(ctx, rec) };
    },
    delete: (ctx, p) => {
      const rec = load(ctx, p.id!);
      f.beforeDelete?.(ctx, rec);
      ctx.store.delete(f.coll, rec.id);
      f.afterDelete?.(ctx, rec);
      return { status: 204 };
    },
  };
}
