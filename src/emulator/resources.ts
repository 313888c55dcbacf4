// Handlers for every resource family. One generic CRUD factory; a family only says how
// its input is checked against the store and how a stored record is returned.
import { X509Certificate } from 'node:crypto';
import { ID_PREFIX } from '../api/limits.ts';
import { EDGE_MODULES, type EdgeFamily, ROUTE_MODULE_NAMES } from '../api/schemas/edges.ts';
import { type Ctx, iso, ref, uriOf } from './context.ts';
import { badRequest, EmulatorError, notFound } from './errors.ts';
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
const policiesExist = (ctx: Ctx, ids: string[], field: string) => {
  for (const id of ids)
    mustExist(ctx, 'ipPolicies', id, field, 'IP policy', 'ERR_IP_RESTRICTION_POLICY_NOT_FOUND');
};
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
      const placeholder = { id: `${prefix}_pending` } as Rec;
      return {
        hostports: body.hostports ?? null,
        modules: await inlineModules(ctx, names, body, placeholder),
      };
    },
    update: (_ctx, rec, body) => {
      if (body.hostports !== undefined) rec.hostports = body.hostports;
    },
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
      // As the public API: refused while an IP restriction uses the policy; its rules go with
      // it; route modules that name it keep the id and act as if it had no rules.
      beforeDelete: (ctx, rec) => {
        const restrictions = ctx.store
          .all('ipRestrictions')
          .filter((r) => (r.ip_policy_ids as string[]).includes(rec.id));
        if (restrictions.length) {
          throw badRequest(
            'ERR_IP_POLICY_IN_USE',
            `Cannot delete IP policy ${rec.id} because it is referenced by IP restrictions: ${restrictions.map((r) => r.id).join(', ')}. Detach it from every IP restriction first`,
          );
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
        mustExist(ctx, 'ipPolicies', b.ip_policy_id as string, 'ip_policy_id', 'IP policy');
        return { cidr: b.cidr, ip_policy_id: b.ip_policy_id, action: b.action };
      },
      update: (_ctx, rec, b) => {
        if (b.cidr !== undefined) rec.cidr = b.cidr;
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
        if (!others.length && dashboard) {
          throw badRequest(
            'ERR_ONLY_RULE_IN_USE',
            `Cannot delete the only rule (${rec.id}) of IP policy ${policy}, in use by dashboard IP restriction ${dashboard.id}. Detach the policy from the restriction first`,
          );
        }
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
        policiesExist(ctx, b.ip_policy_ids as string[], 'ip_policy_ids');
        return { enforced: b.enforced ?? false, type: b.type, ip_policy_ids: b.ip_policy_ids };
      },
      update: (ctx, rec, b) => {
        if (b.ip_policy_ids !== undefined) {
          policiesExist(ctx, b.ip_policy_ids as string[], 'ip_policy_ids');
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
      create: (ctx, b) => {
        for (const id of Object.keys(b.backends as object))
          mustExist(ctx, BACKEND_COLLS, id, 'backends', 'backend');
        return { backends: b.backends };
      },
      update: (ctx, rec, b) => {
        if (b.backends === undefined) return;
        for (const id of Object.keys(b.backends as object)) {
          if (id === rec.id) throw badRequest('ERR_BACKEND_CYCLE', `backends: ${id} cannot point at itself`);
          mustExist(ctx, BACKEND_COLLS, id, 'backends', 'backend');
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
        if (owner !== ctx.caller.ownerId && !ctx.caller.admin) {
          throw badRequest(
            'ERR_OWNER_NOT_ALLOWED',
            `owner_id: only admins may set an owner other than themselves (${ctx.caller.ownerId})`,
          );
        }
        return { public_key: (b.public_key as string).trim(), acl: b.acl ?? [], owner_id: owner };
      },
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
function loadRoute(ctx: Ctx, p: Record<string, string>): Rec {
  if (!ctx.store.get('httpsEdges', p.edge_id!)) throw notFound('HTTPS edge', p.edge_id!);
  const r = ctx.store.get('httpsEdgeRoutes', p.id!);
  if (!r || r.edge_id !== p.edge_id) throw notFound('HTTPS edge route', p.id!);
  return r;
}

const routeHandlers: Record<string, Handler> = {
  create: async (ctx, p, body) => {
    if (!ctx.store.get('httpsEdges', p.edge_id!)) throw notFound('HTTPS edge', p.edge_id!);
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
    ctx.store.put('httpsEdgeRoutes', rec);
    return { status: 201, body: renderRoute(ctx, rec) };
  },
  get: (ctx, p) => ({ status: 200, body: renderRoute(ctx, loadRoute(ctx, p)) }),
  update: async (ctx, p, body) => {
    const rec = { ...loadRoute(ctx, p) };
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
): Record<string, Handler> {
  const get = (ctx: Ctx, p: Record<string, string>) => {
    const rec = load(ctx, p);
    return { rec, mods: { ...((rec.modules as Body | undefined) ?? {}) } };
  };
  return {
    put: async (ctx, p, body) => {
      const { rec, mods } = get(ctx, p);
      mods[name] = await storeModule(ctx, name, body, rec, mods[name] as Body);
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

const loadEdge = (coll: string, what: string) => (ctx: Ctx, p: Record<string, string>) => {
  const rec = ctx.store.get(coll, p.id!);
  if (!rec) throw notFound(what, p.id!);
  return rec;
};

/** Handlers keyed like the operations table ("ipPolicies.create", ...). */
export function resourceHandlers(): Record<string, Handler> {
  const out: Record<string, Handler> = {};
  for (const [group, [path, fam]] of Object.entries(families)) {
    for (const [op, h] of Object.entries(crud(path, fam))) out[`${group}.${op}`] = h;
  }
  for (const [op, h] of Object.entries(routeHandlers)) out[`httpsEdgeRoutes.${op}`] = h;
  for (const n of ROUTE_MODULE_NAMES) {
    for (const [op, h] of Object.entries(moduleHandlers('httpsEdgeRoutes', n, loadRoute))) {
      out[`httpsEdgeRouteModules.${n}.${op}`] = h;
    }
  }
  for (const fam of Object.keys(EDGE_MODULES) as EdgeFamily[]) {
    const coll = `${fam}Edges`;
    for (const n of Object.keys(EDGE_MODULES[fam])) {
      for (const [op, h] of Object.entries(
        moduleHandlers(coll, n, loadEdge(coll, `${fam.toUpperCase()} edge`)),
      )) {
        out[`${fam}EdgeModules.${n}.${op}`] = h;
      }
    }
  }
  return out;
}

export { findBackend };
