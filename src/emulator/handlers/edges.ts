// HTTPS, TCP and TLS edges, an HTTPS edge's routes, and the modules of both as sub-resources
// (src/api/schemas/edges.ts).
import { ID_PREFIX } from '../../api/limits.ts';
import { LOGIN_MODULES, ROUTE_RULES } from '../../api/route-rules.ts';
import { EDGE_MODULES, type EdgeFamily, ROUTE_MODULE_NAMES } from '../../api/schemas/edges.ts';
import { type Ctx, iso, uriOf } from '../context.ts';
import { notFound, refuse } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Rec } from '../store.ts';
import { type Body, common, defined, type Family, type Handler, loader } from './crud.ts';
import { inlineModules, moduleHandlers, renderModules, samlCertFor, storeModule } from './modules.ts';

const EDGE_PREFIX: Record<EdgeFamily, string> = {
  https: ID_PREFIX.httpsEdge,
  tcp: ID_PREFIX.tcpEdge,
  tls: ID_PREFIX.tlsEdge,
};

/**
 * A hostport another edge of the same kind has (ERR_NGROK_7122). Edges of different kinds are not
 * compared: admission's largest-object test gives every kind of edge the same hostports.
 */
function hostportsFree(ctx: Ctx, coll: string, hostports: unknown, self?: string): void {
  for (const hp of (hostports ?? []) as string[]) {
    const other = ctx.store
      .all(coll)
      .find((e) => e.id !== self && ((e.hostports ?? []) as string[]).includes(hp));
    if (other) throw refuse('ERR_HOSTPORT_IN_USE', { HOSTPORT: hp }, `edge ${other.id}`);
  }
}
/** An edge id of another kind, or not an id, in an edge's path (ERR_NGROK_7001). */
const edgeId = (prefix: string) => (id: string) =>
  new RegExp(`^${prefix}_[A-Za-z0-9]+$`).test(id) ? undefined : refuse('ERR_INVALID_EDGE_ID', {}, id);
/**
 * A TLS edge that passes TLS through (terminate_at upstream) has no module that needs it
 * terminated: mutual TLS (ERR_NGROK_7062).
 */
function tlsModulesAllowed(mods: Body): void {
  const tt = mods.tls_termination as Body | undefined;
  const mtls = mods.mutual_tls as Body | undefined;
  if (tt?.terminate_at === 'upstream' && tt.enabled !== false && mtls && mtls.enabled !== false)
    throw refuse(
      'ERR_MODULES_NEED_TLS_TERMINATION',
      { MODULE_NAMES: 'mutual_tls' },
      'tls_termination.terminate_at is upstream',
    );
}

function edgeFamily(family: EdgeFamily, path: string, what: string): Family {
  const names = Object.keys(EDGE_MODULES[family]);
  const prefix = EDGE_PREFIX[family];
  return {
    path,
    coll: `${family}Edges`,
    prefix,
    listKey: `${family}_edges`,
    what,
    create: async (ctx, body) => {
      hostportsFree(ctx, `${family}Edges`, body.hostports);
      const placeholder = { id: `${prefix}_pending` } as Rec;
      const modules = inlineModules(ctx, names, body, placeholder);
      if (family === 'tls') tlsModulesAllowed(modules);
      return { hostports: body.hostports ?? null, modules };
    },
    update: (ctx, rec, body) => {
      if (body.hostports !== undefined) {
        hostportsFree(ctx, `${family}Edges`, body.hostports, rec.id);
        rec.hostports = body.hostports;
      }
    },
    badId: edgeId(prefix),
    render: (ctx, rec) => ({
      modules: undefined,
      ...renderModules(ctx, names, rec),
      ...(family === 'https' ? { routes: routesOf(ctx, rec.id).map((r) => renderRoute(ctx, r)) } : {}),
    }),
    afterDelete: (ctx, rec) => {
      for (const r of routesOf(ctx, rec.id)) ctx.store.delete('httpsEdgeRoutes', r.id);
    },
  };
}

/** By the operations table's group. */
export const EDGE_FAMILIES = {
  httpsEdges: edgeFamily('https', '/edges/https', 'HTTPS edge'),
  tcpEdges: edgeFamily('tcp', '/edges/tcp', 'TCP edge'),
  tlsEdges: edgeFamily('tls', '/edges/tls', 'TLS edge'),
};

// --- an HTTPS edge's routes

const enabledAuth = (mods: Body | undefined) =>
  LOGIN_MODULES.filter((n) => mods?.[n] && (mods[n] as Body).enabled !== false);
/**
 * One login module enabled on a route (ERR_NGROK_7079), OAuth only on the route '/'
 * (ERR_NGROK_7127), and a login module on one route of an edge (ERR_NGROK_7155). The first two
 * one route object shows (CRD admission refuses them too); the third is across routes.
 */
function authAllowed(ctx: Ctx, route: Rec, mods: Body): void {
  const mine = enabledAuth(mods);
  if (mine.length > 1) throw refuse('ERR_CONFLICTING_AUTH_MODULES', {}, `enabled: ${mine.join(', ')}`);
  if (!mine.length) return;
  const get = (f: string) => (f === 'match' ? route.match : mods[f]);
  if (!ROUTE_RULES.oauthAtRoot.test(get))
    throw refuse('ERR_OAUTH_ROUTE_NOT_ROOT', { MATCH: String(route.match) });
  const other = routesOf(ctx, route.edge_id as string).find(
    (r) => r.id !== route.id && enabledAuth(r.modules as Body | undefined).length,
  );
  if (other)
    throw refuse(
      'ERR_AUTH_ON_MANY_ROUTES',
      {},
      `route ${other.id} of ${route.edge_id as string} has ${enabledAuth(other.modules as Body).join(', ')} enabled`,
    );
}
/** One route per match on an edge (ERR_NGROK_7126). */
function matchFree(ctx: Ctx, edge: string, match: unknown, self?: string): void {
  const other = routesOf(ctx, edge).find((r) => r.id !== self && r.match === match);
  if (other) throw refuse('ERR_ROUTE_MATCH_EXISTS', { MATCH: String(match) }, `route ${other.id}`);
}
const stripInput = (body: Body, names: readonly string[]) =>
  Object.fromEntries(
    Object.entries(body).filter(([k]) => !names.includes(k) && k !== 'description' && k !== 'metadata'),
  );

function routesOf(ctx: Ctx, edgeId: string) {
  return ctx.store.all('httpsEdgeRoutes').filter((r) => r.edge_id === edgeId);
}
function renderRoute(ctx: Ctx, rec: Rec): Body {
  const { modules: _m, ...rest } = rec;
  return {
    ...rest,
    uri: uriOf(ctx, rec.id, rec.edge_id as string),
    ...renderModules(ctx, ROUTE_MODULE_NAMES, rec),
  };
}

const loadHttpsEdge = loader(EDGE_FAMILIES.httpsEdges);
function loadRoute(ctx: Ctx, p: Record<string, string>): Rec {
  loadHttpsEdge(ctx, p.edge_id!);
  const r = ctx.store.get('httpsEdgeRoutes', p.id!);
  if (!r) throw notFound('HTTPS edge route', p.id!);
  // a route of another edge: the API names both (ERR_NGROK_7110)
  if (r.edge_id !== p.edge_id)
    throw refuse('ERR_ROUTE_EDGE_MISMATCH', { EID: p.edge_id!, REID: r.edge_id as string });
  return r;
}

const routeHandlers: Record<string, Handler> = {
  create: async (ctx, p, body) => {
    const id = newId(ID_PREFIX.httpsEdgeRoute, ctx.now());
    // the one wait first; then checks and the write at once (samlCertFor)
    const cert = await samlCertFor(body.saml as Body, id);
    loadHttpsEdge(ctx, p.edge_id!);
    matchFree(ctx, p.edge_id!, body.match);
    const rec: Rec = {
      id,
      edge_id: p.edge_id,
      created_at: iso(ctx.now()),
      ...common(body),
      match_type: body.match_type,
      match: body.match,
    };
    rec.modules = inlineModules(ctx, ROUTE_MODULE_NAMES, body, rec, cert);
    authAllowed(ctx, rec, rec.modules as Body);
    ctx.store.put('httpsEdgeRoutes', rec);
    return { status: 201, body: renderRoute(ctx, rec) };
  },
  get: (ctx, p) => ({ status: 200, body: renderRoute(ctx, loadRoute(ctx, p)) }),
  update: async (ctx, p, body) => {
    const cert = await samlCertFor(
      body.saml as Body,
      loadRoute(ctx, p).id,
      (loadRoute(ctx, p).modules as Body | undefined)?.saml as Body,
    );
    // loaded after the wait: a write meanwhile is kept
    const rec = { ...loadRoute(ctx, p) };
    if (body.match !== undefined) matchFree(ctx, rec.edge_id as string, body.match, rec.id);
    const modules = { ...(rec.modules as Body) };
    for (const n of ROUTE_MODULE_NAMES) {
      if (body[n] === null) delete modules[n];
      else if (body[n] !== undefined)
        modules[n] = storeModule(ctx, n, body[n] as Body, rec, modules[n] as Body, cert);
    }
    Object.assign(
      rec,
      defined(stripInput(body, ROUTE_MODULE_NAMES)),
      defined({ description: body.description, metadata: body.metadata }),
    );
    rec.modules = modules;
    authAllowed(ctx, rec, modules);
    ctx.store.put('httpsEdgeRoutes', rec);
    return { status: 200, body: renderRoute(ctx, rec) };
  },
  delete: (ctx, p) => {
    ctx.store.delete('httpsEdgeRoutes', loadRoute(ctx, p).id);
    return { status: 204 };
  },
};

/**
 * Routes and every module sub-resource, keyed like the operations table
 * ("httpsEdgeRoutes.create", "httpsEdgeRouteModules.oauth.put", "tlsEdgeModules.backend.get").
 */
export function edgeSubresourceHandlers(): Record<string, Handler> {
  const out: Record<string, Handler> = {};
  for (const [op, h] of Object.entries(routeHandlers)) out[`httpsEdgeRoutes.${op}`] = h;
  for (const n of ROUTE_MODULE_NAMES) {
    for (const [op, h] of Object.entries(moduleHandlers('httpsEdgeRoutes', n, loadRoute, authAllowed))) {
      out[`httpsEdgeRouteModules.${n}.${op}`] = h;
    }
  }
  for (const fam of Object.keys(EDGE_MODULES) as EdgeFamily[]) {
    const f = EDGE_FAMILIES[`${fam}Edges`];
    const load = loader(f);
    const allowed = fam === 'tls' ? (_ctx: Ctx, _rec: Rec, mods: Body) => tlsModulesAllowed(mods) : undefined;
    for (const n of Object.keys(EDGE_MODULES[fam])) {
      for (const [op, h] of Object.entries(moduleHandlers(f.coll, n, (ctx, p) => load(ctx, p.id!), allowed)))
        out[`${fam}EdgeModules.${n}.${op}`] = h;
    }
  }
  return out;
}
