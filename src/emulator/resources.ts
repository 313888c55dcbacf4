// Handlers for every resource family. One generic CRUD factory; a family only says how
// its input is checked against the store and how a stored record is returned.
import { X509Certificate } from 'node:crypto';
import { ID_PREFIX } from '../api/limits.ts';
import { canonicalCidr } from '../api/rules.ts';
import { EDGE_MODULES, type EdgeFamily, ROUTE_MODULE_NAMES } from '../api/schemas/edges.ts';
import { type Ctx, iso, ref, uriOf } from './context.ts';
import { badRequest, EmulatorError, notFound, refuse, refuses } from './errors.ts';
import { applyFilter } from './filter.ts';
import { newId } from './ids.ts';
import { BACKEND_COLLS, findBackend, mustExist, renderModule, storeModule } from './modules.ts';
import type { Rec } from './store.ts';

type Body = Record<string, unknown>;
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

interface Family {
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

const common = (b: Body) => ({ description: b.description ?? '', metadata: b.metadata ?? '' });
const defined = (b: Body) => Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined));

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

export function crud(path: string, f: Family): Record<string, Handler> {
  const render = (ctx: Ctx, rec: Rec) => {
    const { _owner, ...rest } = rec as Rec & { _owner?: unknown };
    return { ...rest, uri: uriOf(ctx, rec.id), ...(f.render?.(ctx, rec) ?? {}) };
  };
  const load = (ctx: Ctx, id: string) => {
    const bad = f.badId?.(id);
    if (bad) throw bad;
    const rec = ctx.store.get(f.coll, id);
    if (!rec) throw notFound(f.what, id);
    return rec;
  };
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
        path,
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

// --- helpers shared by the families
const policiesExist = (ctx: Ctx, ids: string[]) => {
  for (const id of ids)
    mustExist(ctx, 'ipPolicies', id, () =>
      refuse('ERR_IP_RESTRICTION_POLICY_NOT_FOUND', { POLICY_ID: id }, 'ip_policy_ids'),
    );
};
/** The same CIDR, however it is written (IPv6 in any case or form). */
const sameCidr = (a: string, b: string) =>
  (canonicalCidr(a) ?? a.toLowerCase()) === (canonicalCidr(b) ?? b.toLowerCase());
/** A second rule with this CIDR in one policy (ERR_NGROK_1408). */
function cidrFree(ctx: Ctx, policy: string, cidr: string, self?: string): void {
  const other = ctx.store
    .all('ipPolicyRules')
    .find((r) => r.ip_policy_id === policy && r.id !== self && sameCidr(r.cidr as string, cidr));
  if (other) throw refuse('ERR_IP_POLICY_RULE_CIDR_EXISTS', { CIDR: cidr }, `rule ${other.id} of ${policy}`);
}
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
/** The key of an OpenSSH public key line: its type and blob, without the comment. */
const sshKey = (line: string) => line.trim().split(/\s+/).slice(0, 2).join(' ');
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
const AUTH_MODULES = ['oauth', 'saml', 'oidc'] as const;
const enabledAuth = (mods: Body | undefined) =>
  AUTH_MODULES.filter((n) => mods?.[n] && (mods[n] as Body).enabled !== false);
/**
 * One login module enabled on a route (ERR_NGROK_7079), and on one route of an edge
 * (ERR_NGROK_7155).
 */
function authAllowed(ctx: Ctx, route: Rec, mods: Body): void {
  const mine = enabledAuth(mods);
  if (mine.length > 1) throw refuse('ERR_CONFLICTING_AUTH_MODULES', {}, `enabled: ${mine.join(', ')}`);
  if (!mine.length) return;
  if (!refuses('ERR_AUTH_ON_MANY_ROUTES')) return;
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
const labelsMatch = (want: Record<string, string> | null, have: Record<string, string> | undefined) =>
  !!want && !!have && Object.keys(want).length > 0 && Object.entries(want).every(([k, v]) => have[k] === v);

/** Inline modules given at create: validated and stored like a PUT. */
async function inlineModules(ctx: Ctx, names: readonly string[], body: Body, owner: Rec): Promise<Body> {
  const modules: Body = {};
  for (const n of names) {
    const v = body[n];
    if (v) modules[n] = await storeModule(ctx, n, v as Body, owner);
  }
  return modules;
}
const renderModules = (ctx: Ctx, names: readonly string[], rec: Rec) =>
  Object.fromEntries(
    names.map((n) => [n, renderModule(ctx, n, (rec.modules as Body | undefined)?.[n] as Body, rec)]),
  );
const stripInput = (body: Body, names: readonly string[]) =>
  Object.fromEntries(
    Object.entries(body).filter(([k]) => !names.includes(k) && k !== 'description' && k !== 'metadata'),
  );

function routesOf(ctx: Ctx, edgeId: string) {
  return ctx.store.all('httpsEdgeRoutes').filter((r) => r.edge_id === edgeId);
}
export function renderRoute(ctx: Ctx, rec: Rec): Body {
  const { modules: _m, ...rest } = rec;
  return {
    ...rest,
    uri: uriOf(ctx, rec.id, rec.edge_id as string),
    ...renderModules(ctx, ROUTE_MODULE_NAMES, rec),
  };
}

function edgeFamily(family: EdgeFamily, prefix: string, what: string): Family {
  const names = Object.keys(EDGE_MODULES[family]);
  return {
    coll: `${family}Edges`,
    prefix,
    listKey: `${family}_edges`,
    what,
    create: async (ctx, body) => {
      hostportsFree(ctx, `${family}Edges`, body.hostports);
      const placeholder = { id: `${prefix}_pending` } as Rec;
      const modules = await inlineModules(ctx, names, body, placeholder);
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

const families: Record<string, [string, Family]> = {
  ipPolicies: [
    '/ip_policies',
    {
      coll: 'ipPolicies',
      prefix: ID_PREFIX.ipPolicy,
      listKey: 'ip_policies',
      what: 'IP policy',
      create: () => ({}),
      emptyUpdate: 'ERR_IP_POLICY_UPDATE_EMPTY',
      // As the public API: refused while an IP restriction uses the policy; its rules go with
      // it; route modules that name it keep the id and act as if it had no rules.
      beforeDelete: (ctx, rec) => {
        const restrictions = ctx.store
          .all('ipRestrictions')
          .filter((r) => (r.ip_policy_ids as string[]).includes(rec.id));
        if (restrictions.length) {
          throw refuse('ERR_IP_POLICY_IN_USE', {
            POLICYID: rec.id,
            RESTRICTIONIDS: restrictions.map((r) => r.id).join(', '),
          });
        }
      },
      afterDelete: (ctx, rec) => {
        for (const r of ctx.store.all('ipPolicyRules'))
          if (r.ip_policy_id === rec.id) ctx.store.delete('ipPolicyRules', r.id);
      },
    },
  ],
  ipPolicyRules: [
    '/ip_policy_rules',
    {
      coll: 'ipPolicyRules',
      prefix: ID_PREFIX.ipPolicyRule,
      listKey: 'ip_policy_rules',
      what: 'IP policy rule',
      create: (ctx, b) => {
        const policy = b.ip_policy_id as string;
        mustExist(ctx, 'ipPolicies', policy, () =>
          refuse('ERR_REFERENCE_NOT_FOUND', { ID: policy }, 'ip_policy_id'),
        );
        cidrFree(ctx, policy, b.cidr as string);
        return { cidr: b.cidr, ip_policy_id: b.ip_policy_id, action: b.action };
      },
      emptyUpdate: 'ERR_IP_POLICY_RULE_UPDATE_EMPTY',
      update: (ctx, rec, b) => {
        if (b.cidr !== undefined) {
          cidrFree(ctx, rec.ip_policy_id as string, b.cidr as string, rec.id);
          rec.cidr = b.cidr;
        }
      },
      render: (ctx, rec) => ({ ip_policy_id: undefined, ip_policy: ref(ctx, rec.ip_policy_id as string) }),
      // the only rule of a policy a dashboard restriction uses would lock everyone out
      beforeDelete: (ctx, rec) => {
        const policy = rec.ip_policy_id as string;
        const others = ctx.store
          .all('ipPolicyRules')
          .filter((r) => r.ip_policy_id === policy && r.id !== rec.id);
        const dashboard = ctx.store
          .all('ipRestrictions')
          .find((r) => r.type === 'dashboard' && (r.ip_policy_ids as string[]).includes(policy));
        if (!others.length && dashboard)
          throw refuse(
            'ERR_ONLY_RULE_IN_USE',
            { RULEID: rec.id, RESTRICTIONID: dashboard.id },
            `IP policy ${policy}`,
          );
      },
    },
  ],
  ipRestrictions: [
    '/ip_restrictions',
    {
      coll: 'ipRestrictions',
      prefix: ID_PREFIX.ipRestriction,
      listKey: 'ip_restrictions',
      what: 'IP restriction',
      create: (ctx, b) => {
        policiesExist(ctx, b.ip_policy_ids as string[]);
        const same = ctx.store.all('ipRestrictions').find((r) => r.type === b.type);
        if (same)
          throw refuse(
            'ERR_IP_RESTRICTION_TYPE_EXISTS',
            { TYPE: b.type as string },
            `IP restriction ${same.id}`,
          );
        return { enforced: b.enforced ?? false, type: b.type, ip_policy_ids: b.ip_policy_ids };
      },
      update: (ctx, rec, b) => {
        if (b.ip_policy_ids !== undefined) {
          policiesExist(ctx, b.ip_policy_ids as string[]);
          rec.ip_policy_ids = b.ip_policy_ids;
        }
        if (b.enforced !== undefined) rec.enforced = b.enforced;
      },
      render: (ctx, rec) => ({
        ip_policy_ids: undefined,
        ip_policies: (rec.ip_policy_ids as string[]).map((id) => ref(ctx, id)),
      }),
    },
  ],
  tunnelGroupBackends: [
    '/backends/tunnel_group',
    {
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
          .filter((t) =>
            labelsMatch(rec.labels as Record<string, string>, t.labels as Record<string, string>),
          )
          .map((t) => ref(ctx, t.id)),
      }),
    },
  ],
  weightedBackends: [
    '/backends/weighted',
    {
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
    },
  ],
  sshCredentials: [
    '/ssh_credentials',
    {
      coll: 'sshCredentials',
      prefix: ID_PREFIX.sshCredential,
      listKey: 'ssh_credentials',
      what: 'SSH credential',
      create: (ctx, b) => {
        const owner = (b.owner_id as string | undefined) ?? ctx.caller.ownerId;
        if (owner !== ctx.caller.ownerId && !ctx.caller.admin)
          throw refuse(
            'ERR_OWNER_NOT_ALLOWED',
            {},
            `owner_id: only admins may set an owner other than themselves (${ctx.caller.ownerId})`,
          );
        const key = (b.public_key as string).trim();
        const same = ctx.store
          .all('sshCredentials')
          .find((c) => sshKey(c.public_key as string) === sshKey(key));
        if (same) throw refuse('ERR_SSH_KEY_EXISTS', { PUBKEY: sshKey(key) }, `SSH credential ${same.id}`);
        return { public_key: key, acl: b.acl ?? [], owner_id: owner };
      },
      emptyUpdate: 'ERR_CREDENTIAL_UPDATE_EMPTY',
      update: (_ctx, rec, b) => {
        if (b.acl !== undefined) rec.acl = b.acl;
      },
    },
  ],
  certificateAuthorities: [
    '/certificate_authorities',
    {
      coll: 'certificateAuthorities',
      prefix: ID_PREFIX.certificateAuthority,
      listKey: 'certificate_authorities',
      what: 'certificate authority',
      create: (_ctx, b) => {
        try {
          const cert = new X509Certificate(b.ca_pem as string);
          return { ca_pem: b.ca_pem, subject_common_name: /CN=([^\n,]+)/.exec(cert.subject)?.[1] ?? '' };
        } catch {
          throw badRequest('ERR_INVALID_PEM', 'ca_pem: is not a parsable PEM certificate');
        }
      },
    },
  ],
  httpsEdges: ['/edges/https', edgeFamily('https', ID_PREFIX.httpsEdge, 'HTTPS edge')],
  tcpEdges: ['/edges/tcp', edgeFamily('tcp', ID_PREFIX.tcpEdge, 'TCP edge')],
  tlsEdges: ['/edges/tls', edgeFamily('tls', ID_PREFIX.tlsEdge, 'TLS edge')],
};

// --- routes and module sub-resources
const httpsEdgeId = edgeId(ID_PREFIX.httpsEdge);
function loadEdgeOfRoute(ctx: Ctx, id: string): Rec {
  const bad = httpsEdgeId(id);
  if (bad) throw bad;
  const edge = ctx.store.get('httpsEdges', id);
  if (!edge) throw notFound('HTTPS edge', id);
  return edge;
}
function loadRoute(ctx: Ctx, p: Record<string, string>): Rec {
  loadEdgeOfRoute(ctx, p.edge_id!);
  const r = ctx.store.get('httpsEdgeRoutes', p.id!);
  if (!r) throw notFound('HTTPS edge route', p.id!);
  // a route of another edge: the API names both (ERR_NGROK_7110)
  if (r.edge_id !== p.edge_id)
    throw refuse('ERR_ROUTE_EDGE_MISMATCH', { EID: p.edge_id!, REID: r.edge_id as string });
  return r;
}

const routeHandlers: Record<string, Handler> = {
  create: async (ctx, p, body) => {
    loadEdgeOfRoute(ctx, p.edge_id!);
    matchFree(ctx, p.edge_id!, body.match);
    const id = newId(ID_PREFIX.httpsEdgeRoute, ctx.now());
    const rec: Rec = {
      id,
      edge_id: p.edge_id,
      created_at: iso(ctx.now()),
      ...common(body),
      match_type: body.match_type,
      match: body.match,
    };
    rec.modules = await inlineModules(ctx, ROUTE_MODULE_NAMES, body, rec);
    authAllowed(ctx, rec, rec.modules as Body);
    ctx.store.put('httpsEdgeRoutes', rec);
    return { status: 201, body: renderRoute(ctx, rec) };
  },
  get: (ctx, p) => ({ status: 200, body: renderRoute(ctx, loadRoute(ctx, p)) }),
  update: async (ctx, p, body) => {
    const rec = { ...loadRoute(ctx, p) };
    if (body.match !== undefined) matchFree(ctx, rec.edge_id as string, body.match, rec.id);
    const modules = { ...(rec.modules as Body) };
    for (const n of ROUTE_MODULE_NAMES) {
      if (body[n] === null) delete modules[n];
      else if (body[n] !== undefined)
        modules[n] = await storeModule(ctx, n, body[n] as Body, rec, modules[n] as Body);
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

function moduleHandlers(
  coll: string,
  name: string,
  load: (ctx: Ctx, p: Record<string, string>) => Rec,
  /** What the module's owner must still satisfy with the module in place. */
  allowed?: (ctx: Ctx, rec: Rec, mods: Body) => void,
): Record<string, Handler> {
  const get = (ctx: Ctx, p: Record<string, string>) => {
    const rec = load(ctx, p);
    return { rec, mods: { ...((rec.modules as Body | undefined) ?? {}) } };
  };
  return {
    put: async (ctx, p, body) => {
      const { rec, mods } = get(ctx, p);
      mods[name] = await storeModule(ctx, name, body, rec, mods[name] as Body);
      allowed?.(ctx, rec, mods);
      ctx.store.put(coll, { ...rec, modules: mods });
      return { status: 200, body: renderModule(ctx, name, mods[name] as Body, rec) };
    },
    get: (ctx, p) => {
      const { rec, mods } = get(ctx, p);
      if (!mods[name])
        throw new EmulatorError(404, 'ERR_MODULE_NOT_CONFIGURED', `${name} is not configured on ${rec.id}`);
      return { status: 200, body: renderModule(ctx, name, mods[name] as Body, rec) };
    },
    delete: (ctx, p) => {
      const { rec, mods } = get(ctx, p);
      delete mods[name];
      ctx.store.put(coll, { ...rec, modules: mods });
      return { status: 204 };
    },
  };
}

const loadEdge = (coll: string, what: string, prefix: string) => (ctx: Ctx, p: Record<string, string>) => {
  const bad = edgeId(prefix)(p.id!);
  if (bad) throw bad;
  const rec = ctx.store.get(coll, p.id!);
  if (!rec) throw notFound(what, p.id!);
  return rec;
};
const EDGE_PREFIX: Record<EdgeFamily, string> = {
  https: ID_PREFIX.httpsEdge,
  tcp: ID_PREFIX.tcpEdge,
  tls: ID_PREFIX.tlsEdge,
};

/** Handlers keyed like the operations table ("ipPolicies.create", ...). */
export function resourceHandlers(): Record<string, Handler> {
  const out: Record<string, Handler> = {};
  for (const [group, [path, fam]] of Object.entries(families)) {
    for (const [op, h] of Object.entries(crud(path, fam))) out[`${group}.${op}`] = h;
  }
  for (const [op, h] of Object.entries(routeHandlers)) out[`httpsEdgeRoutes.${op}`] = h;
  for (const n of ROUTE_MODULE_NAMES) {
    for (const [op, h] of Object.entries(moduleHandlers('httpsEdgeRoutes', n, loadRoute, authAllowed))) {
      out[`httpsEdgeRouteModules.${n}.${op}`] = h;
    }
  }
  for (const fam of Object.keys(EDGE_MODULES) as EdgeFamily[]) {
    const coll = `${fam}Edges`;
    for (const n of Object.keys(EDGE_MODULES[fam])) {
      for (const [op, h] of Object.entries(
        moduleHandlers(
          coll,
          n,
          loadEdge(coll, `${fam.toUpperCase()} edge`, EDGE_PREFIX[fam]),
          fam === 'tls' ? (_ctx, _rec, mods) => tlsModulesAllowed(mods) : undefined,
        ),
      )) {
        out[`${fam}EdgeModules.${n}.${op}`] = h;
      }
    }
  }
  return out;
}

/** A weighted backend's key names a backend (ERR_NGROK_6501). */
const backendExists = (ctx: Ctx, id: string) =>
  mustExist(ctx, BACKEND_COLLS, id, () => refuse('ERR_BACKEND_NOT_FOUND', { ID: id }, 'backends'));

export { findBackend };
