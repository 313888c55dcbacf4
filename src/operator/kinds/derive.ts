// CRD fields derived from the wire schemas: one field list per object of the API, read here
// to build the CRD's zod shape (camelCase names, the rules as patterns and CEL, the
// descriptions), the wire body from a spec (`toWire`) and a spec from what the API holds
// (`fromWire`, for export). What the wire does not say is declared per field: a CRD name
// that is not the plain camelCase, a value taken from a Secret, a reference that replaces an
// id, the CRD's own length bounds (CEL cost), a field the CRD requires.
import { z } from 'zod';
import type { CrossRule, Rule } from '../../api/rules.ts';
import { tagOf } from '../../api/schemas/common.ts';
import {
  type ExportContext,
  exportEnabled,
  type Reference,
  type ResolveRef,
  type ResolveSecret,
  type SecretReference,
} from '../runtime/bindings/binding.ts';
import { cel, doc, immutable, ruled, ruledMap, SecretKeyRef } from './crd-schema.ts';
import { camel } from './names.ts';

export { camel };

type Obj = Record<string, unknown>;
type CelRule = Parameters<typeof cel>[1];
type Def = {
  type: string;
  innerType?: z.ZodType;
  element?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  entries?: Record<string, string>;
  checks?: { _zod: { def: CheckDef } }[];
};
type CheckDef = { check: string; minimum?: number; value?: number };

export interface WireContext {
  ref: ResolveRef;
  secret: ResolveSecret;
}

export interface Field {
  /** The CRD's name, where the plain camelCase of the wire name is not it. */
  name?: string;
  /**
   * The CRD's bound on a string's length (below its rule's, if it has one), a list's items or
   * a map's keys. Bounds keep CEL's cost and the API's body size: see BODY_BUDGET.
   */
  max?: number;
  /** The CRD's bound on the length of each string of a list, or of each value of a map. */
  itemMax?: number;
  /** The CRD's bound on the length of a map's keys (below their rule's, if they have one). */
  keyMax?: number;
  /** The CRD's least number of items of a list, where the API's is lower. */
  min?: number;
  /** A list whose items the API holds unique (a repeat is refused at admission). */
  unique?: boolean;
  /** A list whose items the API holds lower case (it refuses, rather than lower-cases, others). */
  lowercase?: boolean;
  /** A map whose keys the API holds unique whatever their case (header names). */
  keysUniqueIgnoringCase?: boolean;
  /**
   * The CRD's bound on the characters of a map's values together: a few values as long as the
   * API takes, or many short ones, within one body budget (see BODY_BUDGET).
   */
  valuesTotalMax?: number;
  /** Required in the CRD though the API takes it absent (it has a default). */
  required?: boolean;
  /** The CRD's default (shown by `kubectl explain`), where it is the API's too. */
  default?: unknown;
  /** The wire value from the CRD's, where they differ (the API lower-cases, say). */
  toWire?(value: unknown): unknown;
  /** The API's output holds these ids as Refs under this name. */
  refsOut?: string;
  /** Immutable in the CRD (the API's update does not take it). */
  immutable?: boolean;
  /** The value comes from a key of a Secret: the CRD has `<name>Ref`; the label names it in export. */
  secret?: string;
  /** Left out of the CRD: the binding sets it (a parent id, say). */
  omit?: boolean;
  /** Fields of a nested object. */
  fields?: FieldMap;
  /** The wire value is built from CRD fields of the CRD's own (references in place of ids). */
  replace?: Replacement;
}
export type FieldMap = Record<string, Field>;

/** CRD fields that stand for one wire field (e.g. references and ids for a list of ids). */
export interface Replacement {
  crd: Record<string, z.ZodType>;
  toWire(spec: Obj, ctx: WireContext): unknown;
  /** The CRD fields from the API's output object holding this field (output names differ: Refs). */
  fromWire(out: Obj, x: ExportContext): Obj;
  /** CEL rules the CRD fields need among themselves. */
  rules?: CelRule[];
  /** The objects the CRD fields name, `path` being the spec path of the object holding them. */
  references?(spec: Obj, path: string): Reference[];
}

const defOf = (s: z.ZodType) => s._zod.def as unknown as Def;
const descriptionOf = (s: z.ZodType): string | undefined => z.globalRegistry.get(s)?.description;
const checksOf = (s: z.ZodType) => (defOf(s).checks ?? []).map((c) => c._zod.def);
const limit = (s: z.ZodType, check: string) => checksOf(s).find((c) => c.check === check);

/** The wire schema without optional/default/nullable wrappers, and what they said. */
function unwrap(s: z.ZodType) {
  let inner = s;
  let optional = false;
  let description = descriptionOf(s);
  for (;;) {
    const d = defOf(inner);
    if (d.type === 'optional' || d.type === 'nullable' || d.type === 'default') {
      if (d.type !== 'nullable') optional = true;
      inner = d.innerType!;
      description ??= descriptionOf(inner);
    } else return { inner, optional, description };
  }
}

/**
 * The API bounds the size of a request (the emulator's `bodyLimit`, 256 KiB), so every string,
 * list and map of a CRD is bounded, and a kind's bounds keep its largest create body (modules
 * inline, the engine's description and metadata) within this budget, leaving the rest of the
 * limit for Secret values, which admission cannot see. A character costs up to 6 bytes in JSON
 * (a control character is written \u00XX); test/unit/largest-objects.test.ts sends each kind's
 * largest object to the emulator.
 */
export const BODY_BUDGET = 0.9 * 256 * 1024;
const STRING_MAX = 512;
const LIST_MAX = 100;
const MAP_VALUE_MAX = 4096;
/** Map keys without a rule of their own (labels). */
const MAP_KEY_MAX = 256;
/** The CRD bound of a ruled string: the rule's, or the field's where lower. */
const bounded = (r: Rule, max: number | undefined): Rule =>
  max === undefined || max >= r.maxLength ? r : { ...r, maxLength: max };

/** A rule the CRD's zod side tests and admission checks by CEL, keeping what the schema had. */
function checkedBoth<T extends z.ZodType>(
  s: T,
  test: (v: z.infer<T>) => boolean,
  rule: string,
  message: string,
): T {
  const kept = z.globalRegistry.get(s) ?? {};
  return cel(s.refine(test, message).meta(kept) as unknown as T, { rule, message });
}

/** The CRD type of one wire value; `at` is the CRD name used in messages. */
function crdValue(s: z.ZodType, at: string, f: Field): z.ZodType {
  const d = defOf(s);
  const tag = tagOf(s);
  switch (d.type) {
    case 'string': {
      if (tag?.rule) return ruled(bounded(tag.rule, f.max), at);
      const min = limit(s, 'min_length')?.minimum;
      const str = z.string().max(f.max ?? STRING_MAX);
      return min ? str.min(min) : str;
    }
    case 'number': {
      let n = z.number();
      if (limit(s, 'number_format')) n = n.int();
      const lo = limit(s, 'greater_than')?.value ?? tag?.min;
      const hi = Math.min(limit(s, 'less_than')?.value ?? Infinity, tag?.max ?? Infinity);
      if (lo !== undefined) n = n.min(Math.max(lo, tag?.min ?? -Infinity));
      if (hi !== Infinity) n = n.max(hi);
      return n;
    }
    case 'boolean':
      return z.boolean();
    case 'enum':
      return z.enum(Object.values(d.entries!) as [string, ...string[]]);
    case 'array': {
      const min = f.min ?? limit(s, 'min_length')?.minimum;
      let arr: z.ZodArray = z.array(
        crdValue(unwrap(d.element!).inner, at, { ...f, max: f.itemMax, itemMax: undefined }),
      );
      arr = arr.max(f.max ?? LIST_MAX);
      if (min) arr = arr.min(min);
      const whole = tag?.list;
      if (whole) {
        const message = `${at} must ${whole.must}`;
        arr = cel(
          arr.refine((l) => whole.test(l), message),
          { rule: whole.cel, message },
        );
      }
      if (f.lowercase)
        arr = checkedBoth(
          arr,
          (l) => l.every((v) => String(v) === String(v).toLowerCase()),
          'self.all(v, v == v.lowerAscii())',
          `${at} must be written in lower case`,
        );
      // a rule, not a set-typed list: server-side apply answers a repeat in a set with a 500
      if (f.unique)
        arr = checkedBoth(
          arr,
          (l) => new Set(l).size === l.length,
          'self.all(v, self.exists_one(w, w == v))',
          `${at} must not hold a value twice`,
        );
      return arr;
    }
    case 'record': {
      const keyRule = tagOf(d.keyType!)?.rule;
      const valueRule = tagOf(d.valueType!)?.rule;
      if ((keyRule && !keyRule.pattern) || (valueRule && !valueRule.pattern))
        throw new Error(`derive: map keys and values need a pattern (${at})`);
      const map = ruledMap(at, {
        keyRule,
        valueRule,
        keyMax: Math.min(f.keyMax ?? Infinity, keyRule?.maxLength ?? MAP_KEY_MAX),
        valueMax: Math.min(f.itemMax ?? MAP_VALUE_MAX, valueRule?.maxLength ?? Infinity),
        maxProperties: f.max ?? LIST_MAX,
      });
      const unique = f.keysUniqueIgnoringCase
        ? checkedBoth(
            map,
            (m) => new Set(Object.keys(m).map((k) => k.toLowerCase())).size === Object.keys(m).length,
            'self.all(k, self.filter(j, j.lowerAscii() == k.lowerAscii()).size() == 1)',
            `${at} must not name a key twice in different cases`,
          )
        : map;
      const total = f.valuesTotalMax;
      if (total === undefined) return unique;
      // CEL's size() of a string counts code points, as spreading a string does
      return checkedBoth(
        unique,
        (m) => Object.values(m as Record<string, string>).reduce((n, v) => n + [...v].length, 0) <= total,
        `self.map(k, size(self[k])).sum() <= ${total}`,
        `${at} values must hold at most ${total} characters in all`,
      );
    }
    case 'object':
      return derive(s as z.ZodObject, f.fields ?? {}).schema;
    default:
      throw new Error(`derive: no CRD type for wire type ${d.type} (${at})`);
  }
}

export interface Derived {
  /** The CRD's zod object: its fields, their rules (pattern/CEL and zod), descriptions. */
  schema: z.ZodObject;
  /** The wire body from a spec object; enabled defaults to true, absent fields stay absent. */
  toWire(spec: Obj, ctx: WireContext): Obj;
  /**
   * The spec object from the API's output. `top`: a module's own fields, compared one by one
   * (the API's defaults are left out); below that, objects are compared whole (kept).
   */
  fromWire(out: Obj, x: ExportContext, top?: boolean): Obj;
  /** The objects a spec object names, under `path`. */
  references(spec: Obj, path: string): Reference[];
  /** The Secret keys a spec object names, under `path`. */
  secrets(spec: Obj, path: string): SecretReference[];
}

const isEmpty = (v: unknown) =>
  v === undefined ||
  v === null ||
  v === false ||
  v === 0 ||
  v === '' ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0);

export const noSecrets: ResolveSecret = () => {
  throw new Error('this kind takes no values from Secrets');
};

/** The CRD object for a wire object, and both mappings between them. */
export function derive(wire: z.ZodObject, fields: FieldMap = {}): Derived {
  const entries = Object.entries(wire.shape as Record<string, z.ZodType>).filter(([k]) => !fields[k]?.omit);
  const nested = new Map(
    entries.flatMap(([k, s]) => {
      const { inner } = unwrap(s);
      if (defOf(inner).type !== 'object' || fields[k]?.secret || fields[k]?.replace) return [];
      return [[k, derive(inner as z.ZodObject, fields[k]?.fields ?? {})] as const];
    }),
  );
  const shape: Record<string, z.ZodType> = {};
  const names = new Map<string, string>();
  const rules: CelRule[] = [];
  for (const [key, s] of entries) {
    const f = fields[key] ?? {};
    if (f.replace) {
      Object.assign(shape, f.replace.crd);
      rules.push(...(f.replace.rules ?? []));
      names.set(key, Object.keys(f.replace.crd)[0]!);
      continue;
    }
    const { inner, optional, description } = unwrap(s);
    const name = f.secret ? `${f.name ?? camel(key)}Ref` : (f.name ?? camel(key));
    names.set(key, name);
    let t: z.ZodType;
    if (key === 'enabled') t = z.boolean().default(true);
    else t = f.secret ? SecretKeyRef : (nested.get(key)?.schema ?? crdValue(inner, name, f));
    if (f.immutable) t = immutable(t, name);
    if (f.default !== undefined) t = t.default(f.default as never);
    let text = f.secret && description ? `the Secret key holding ${description}` : description;
    if (text && f.immutable) text = `${text} (immutable)`;
    if (text) t = doc(t, text);
    shape[name] = optional && !f.required && key !== 'enabled' && f.default === undefined ? t.optional() : t;
  }
  const name = (k: string) => names.get(k) ?? camel(k);
  const cross: CrossRule[] = tagOf(wire)?.cross ?? [];
  for (const r of cross)
    rules.push({
      rule: r.cel(name),
      message: r.field ? `${name(r.field)} ${r.must(name)}` : r.must(name),
    });
  let schema: z.ZodObject = z.object(shape);
  if (cross.length)
    schema = schema.superRefine((o, ctx) => {
      for (const r of cross)
        if (!r.test((k) => (o as Obj)[name(k)]))
          ctx.addIssue({ code: 'custom', path: r.field ? [name(r.field)] : [], message: r.must(name) });
    }) as unknown as z.ZodObject;
  if (rules.length) schema = cel(schema, ...rules);
  const description = descriptionOf(wire);
  if (description) schema = doc(schema, description);

  const toWire = (spec: Obj, ctx: WireContext): Obj => {
    const out: Obj = {};
    for (const [k] of entries) {
      const f = fields[k] ?? {};
      if (f.replace) {
        out[k] = f.replace.toWire(spec, ctx);
        continue;
      }
      const v = spec[name(k)];
      if (k === 'enabled') out[k] = v ?? true;
      else if (v === undefined) continue;
      else if (f.secret) out[k] = ctx.secret((v as SecretKeyRef).name, (v as SecretKeyRef).key);
      else if (nested.has(k)) out[k] = nested.get(k)!.toWire(v as Obj, ctx);
      else out[k] = f.toWire ? f.toWire(v) : v;
    }
    return out;
  };

  const fromWire = (o: Obj, x: ExportContext, top = true): Obj => {
    const out: Obj = {};
    for (const [k, s] of entries) {
      const f = fields[k] ?? {};
      if (f.replace) {
        Object.assign(out, f.replace.fromWire(o, x));
        continue;
      }
      let v = f.refsOut ? (o[f.refsOut] as { id: string }[] | undefined)?.map((r) => r.id) : o[k];
      if (v === undefined || v === null) continue;
      if (k === 'enabled') {
        Object.assign(out, exportEnabled({ enabled: v as boolean }));
        continue;
      }
      if (f.secret) v = v === '' ? undefined : x.secret(f.secret, v as string);
      else if (nested.has(k)) v = nested.get(k)!.fromWire(v as Obj, x, false);
      // a module's own optional fields: what the API defaults is left out
      const optional = unwrap(s).optional && !f.required;
      const fallback = (shape[name(k)] as { _zod: { def: { defaultValue?: unknown } } } | undefined)?._zod.def
        .defaultValue;
      if (top && optional && (isEmpty(v) || v === fallback)) continue;
      if (v !== undefined) out[name(k)] = v;
    }
    return out;
  };

  const references = (spec: Obj, path: string): Reference[] =>
    entries.flatMap(([k]) => {
      const r = fields[k]?.replace;
      if (r) return r.references?.(spec, path) ?? [];
      const v = spec[name(k)];
      return nested.has(k) && v ? nested.get(k)!.references(v as Obj, `${path}.${name(k)}`) : [];
    });
  const secrets = (spec: Obj, path: string): SecretReference[] =>
    entries.flatMap(([k]) => {
      const v = spec[name(k)] as Obj | undefined;
      if (!v) return [];
      if (fields[k]?.secret) return [{ path: `${path}.${name(k)}`, ...(v as SecretKeyRef) }];
      return nested.has(k) ? nested.get(k)!.secrets(v, `${path}.${name(k)}`) : [];
    });

  return { schema, toWire, fromWire, references, secrets };
}

/** The CRD type of one wire value, described as the wire field is. */
export function crdOf(wire: z.ZodType, name: string, f: Field = {}): z.ZodType {
  const { inner, description } = unwrap(wire);
  const t = crdValue(inner, name, f);
  return description ? doc(t, description) : t;
}
