import { z } from 'zod';
import { DESCRIPTION_MAX_BYTES, type IdKind, METADATA_MAX_BYTES, UINT32_MAX } from '../limits.ts';
import { byteLength, idRule, type Rule } from '../rules.ts';

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

/** A string the API checks by one of the spec's rules (rules.ts). */
export const checked = (r: Rule) => rule(z.string(), r.test, `must ${r.must}`, r.errorCode);

export const idOf = (...kinds: IdKind[]) => checked(idRule(...kinds));

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
