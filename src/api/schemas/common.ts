import { z } from 'zod';
import { DESCRIPTION_MAX_BYTES, type IdKind, METADATA_MAX_BYTES, UINT32_MAX } from '../limits.ts';
import { byteLength, type CrossRule, idRule, type ListRule, type Rule } from '../rules.ts';

/** Custom issue parameters carry a stable error code for the emulator's error body. */
export const code = (error_code: string) => ({ params: { error_code } });

export const Ref = z.object({ id: z.string(), uri: z.string() });
export type Ref = z.infer<typeof Ref>;

export const maxBytes = (max: number, errorCode: string) =>
  z
    .string()
    .refine((s) => byteLength(s) <= max, { message: `must be at most ${max} bytes`, ...code(errorCode) });

export const Description = maxBytes(DESCRIPTION_MAX_BYTES, 'ERR_DESCRIPTION_TOO_LONG');
export const Metadata = maxBytes(METADATA_MAX_BYTES, 'ERR_METADATA_TOO_LONG');

/**
 * A coded rule. zod's built-in checks drop custom params, so every rule whose error code
 * the API promises is a refinement.
 */
export const rule = <T extends z.ZodType>(
  schema: T,
  ok: (v: z.output<T>) => boolean,
  message: string,
  errorCode: string,
) => schema.refine(ok, { message, ...code(errorCode) });

/**
 * What a wire field's zod checks cannot say readably (custom refinements), kept beside the
 * schema so the CRD built from it (operator/kinds/derive.ts) gets the same rule.
 */
export interface Tag {
  rule?: Rule;
  min?: number;
  max?: number;
  cross?: CrossRule[];
  list?: ListRule;
}
const TAGS = new WeakMap<z.ZodType, Tag>();
export const tagOf = (s: z.ZodType): Tag | undefined => TAGS.get(s);
const tagged = <T extends z.ZodType>(s: T, tag: Tag): T => {
  TAGS.set(s, { ...TAGS.get(s), ...tag });
  return s;
};

/** A further check of a ruled string, with its own error code (the wire side only). */
export interface AlsoCheck {
  test(v: string): boolean;
  message: string;
  errorCode: string;
}

/** A string the API checks by one of the spec's rules (rules.ts), and by `also` after it. */
export const checked = (r: Rule, ...also: AlsoCheck[]) =>
  tagged(
    also.reduce(
      (s, a) => rule(s, a.test, a.message, a.errorCode),
      rule(z.string(), r.test, `must ${r.must}`, r.errorCode),
    ),
    { rule: r },
  );

/**
 * A string that may not be empty (refused with `emptyCode`) held to one of the spec's rules: an
 * empty one is refused as empty only.
 */
export const checkedNonEmpty = (emptyCode: string, r: Rule) =>
  tagged(
    rule(nonEmpty(emptyCode), (v) => v === '' || r.test(v), `must ${r.must}`, r.errorCode),
    { rule: r },
  );

/** A string of at most `max` bytes, refused with `errorCode` (a ruled string's further check). */
export const atMostBytes = (max: number, errorCode: string): AlsoCheck => ({
  test: (v) => byteLength(v) <= max,
  message: `must be at most ${max} bytes`,
  errorCode,
});

/** A number the API holds to [min, max] with its own error code. */
export const ranged = <T extends z.ZodNumber>(
  schema: T,
  { min, max }: { min?: number; max?: number },
  message: string,
  errorCode: string,
) =>
  tagged(
    rule(
      schema,
      (n) => (min === undefined || n >= min) && (max === undefined || n <= max),
      message,
      errorCode,
    ),
    { min, max },
  );

/** A list the API holds to a rule as a whole. */
export const listChecked = <T extends z.ZodArray>(schema: T, r: ListRule) =>
  tagged(rule(schema, r.test, `must ${r.must}`, r.errorCode), { list: r });

/** An object the API holds to rules across its fields (rules.ts CROSS), each with its error code. */
export const crossChecked = <T extends z.ZodObject>(schema: T, ...rules: CrossRule[]) =>
  tagged(
    schema.superRefine((o, ctx) => {
      const get = (f: string) => (o as Record<string, unknown>)[f];
      for (const r of rules)
        if (!r.test(get))
          ctx.addIssue({
            code: 'custom',
            path: r.field ? [r.field] : [],
            message: r.wireMessage?.(get) ?? r.must((f) => f),
            params: { error_code: r.errorCode },
          });
    }),
    { cross: rules },
  );

/** A description of a wire field (the CRD built from it carries it), on a copy: shared schemas stay bare. */
export const describe = <T extends z.ZodType>(schema: T, description: string): T => {
  const out = schema.meta({ ...(z.globalRegistry.get(schema) ?? {}), description }) as T;
  const tag = TAGS.get(schema);
  return tag ? tagged(out, tag) : out;
};

export const idOf = (...kinds: IdKind[]) => checked(idRule(...kinds));
/** An id field whose malformed value the API refuses with a number of its own (`errorCode`). */
export const idCoded = (errorCode: string, ...kinds: IdKind[]) => checked({ ...idRule(...kinds), errorCode });

/**
 * Bounds a number for admission (the CRD's minimum and maximum) without a check of its own on
 * the wire: for fields whose absence is their zero value (a default short-circuits zod's checks),
 * checked as a whole by the object that holds them.
 */
export const admissionBounds = <T extends z.ZodNumber>(schema: T, bounds: { min?: number; max?: number }) =>
  tagged(schema.clone() as T, bounds);

/**
 * A string that may not be empty, refused with its own error code (before zod's own minimum,
 * which only tells the CRD to ask for at least one character).
 */
export const nonEmpty = (errorCode: string) =>
  z
    .string()
    .refine((s) => s.length > 0, { message: 'must not be empty', ...code(errorCode) })
    .min(1);

export const uint32 = z.number().int().min(0).max(UINT32_MAX);
export const StringMap = z.record(z.string(), z.string());

/** Fields every managed resource has in responses. */
export const resourceOut = {
  id: z.string(),
  uri: z.string(),
  created_at: z.string(),
  description: z.string().optional(),
  metadata: z.string().optional(),
};
/** Fields every managed resource accepts in create and update bodies. */
export const resourceIn = {
  description: Description.optional(),
  metadata: Metadata.optional(),
};

export const listResponse = <K extends string, T extends z.ZodType>(key: K, item: T) =>
  z.object({ [key]: z.array(item), uri: z.string(), next_page_uri: z.string().nullable() } as {
    [P in K]: z.ZodArray<T>;
  } & { uri: z.ZodString; next_page_uri: z.ZodNullable<z.ZodString> });

export const Empty = z.strictObject({});
