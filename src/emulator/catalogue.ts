// The public API's error reference (one page per error, ERR_NGROK_<number>) as the emulator
// serves it: errors.json holds every page that applies to this spec's resources and operations,
// with the HTTP status, the message in the reference's words (<PLACEHOLDERS> where it names
// values), what triggers it and how this project handles it:
//   emulator  the emulator refuses it (status, ERR_NGROK_<number>, the message filled in)
//   crd       the emulator refuses it, and CRD admission refuses it first (src/api/rules.ts,
//             route-rules.ts)
//   operator  the emulator refuses it; state across objects, which the operator names before
//             the request (a conflict key) or reports from the API's refusal
//   gap       it applies, but the emulator does not refuse it yet: `why` says what blocks it
// Where the spec and the reference disagree the spec wins, and `why` says so. The reference pages
// give no HTTP status: `status` is the API's convention (400 a bad request, 401/403 authentication,
// 404 a missing resource, 429 the rate limit) or, for errors raised to traffic, the status an end
// user would see. The pages that do not apply (n/a, each with why) are a test fixture:
// test/integration/public-errors.reference.json; test/integration/public-errors.test.ts sends a
// request for every entry the emulator refuses and prints the coverage of both together.
// The file is data, checked when loaded: a malformed entry, a number or a name twice, a gap
// without its reason stop the emulator from starting rather than answering with a wrong number.
import { z } from 'zod';
import data from './errors.json' with { type: 'json' };

export type Handling = 'emulator' | 'crd' | 'operator' | 'gap' | 'n/a';
/** Entries the emulator refuses with their public number. */
export const ENFORCED: readonly Handling[] = ['emulator', 'crd', 'operator'];

const Entry = z.strictObject({
  /** The N of ERR_NGROK_N. */
  number: z.number().int().positive(),
  status: z.number().int().min(400).max(599),
  /** The part of the reference it belongs to (the fixture's `areas` say where it was read). */
  area: z.string().min(1),
  handling: z.enum(['emulator', 'crd', 'operator', 'gap']),
  /** Descriptive names; the emulator keeps the one it refuses with in `details.code`. */
  names: z.array(z.string().regex(/^ERR_[A-Z0-9_]+$/)).min(1),
  /** The reference's message; <NAME> stands for a value. */
  message: z.string().min(1),
  /** What request (or event) triggers it. */
  trigger: z.string().min(1),
  /** Why it is handled so: a gap always says; others where the spec wins or a number moved. */
  why: z.string().min(1).optional(),
});
export type ServedError = z.infer<typeof Entry>;
/** An entry of the whole reference: a served one, or a page that does not apply here (n/a). */
export type PublicError = Omit<ServedError, 'handling' | 'names'> & {
  handling: Handling;
  names?: readonly string[];
};

const twice = <T>(xs: readonly T[]) => xs.filter((x, i) => xs.indexOf(x) !== i);

const File = z
  .strictObject({ $comment: z.string(), entries: z.array(Entry).min(1) })
  .superRefine(({ entries }, ctx) => {
    const numbers = twice(entries.map((x) => x.number));
    if (numbers.length)
      ctx.addIssue({ code: 'custom', message: `numbers listed twice: ${numbers.join(', ')}` });
    const names = twice(entries.flatMap((x) => x.names));
    if (names.length) ctx.addIssue({ code: 'custom', message: `names listed twice: ${names.join(', ')}` });
    for (const x of entries)
      if (x.handling === 'gap' && !x.why)
        ctx.addIssue({ code: 'custom', message: `ERR_NGROK_${x.number} is a gap and does not say why` });
  });

/** The entries of an error file, checked; throws naming every problem. */
export function loadCatalogue(raw: unknown): readonly ServedError[] {
  const parsed = File.safeParse(raw);
  if (!parsed.success)
    throw new Error(
      `emulator: src/emulator/errors.json is not a valid error catalogue: ${parsed.error.issues
        .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
        .join('; ')}`,
    );
  return parsed.data.entries;
}

/** Every entry of the reference that applies to this spec, in the reference's order. */
export const SERVED: readonly ServedError[] = loadCatalogue(data);

const BY_NAME = new Map(SERVED.flatMap((x) => x.names.map((n) => [n, x] as const)));

/** The entry whose descriptive name (details.code) this is, if the reference has one. */
export const entryByName = (name: string): ServedError | undefined => BY_NAME.get(name);

/** Public numbers by descriptive name: every name an entry carries. */
export const PUBLIC_NUMBER_BY_NAME: Readonly<Record<string, number>> = Object.fromEntries(
  [...BY_NAME].map(([n, x]) => [n, x.number]),
);

export const isApplicable = (x: { handling: Handling }): boolean => x.handling !== 'n/a';
export const isEnforced = (x: { handling: Handling }): boolean => ENFORCED.includes(x.handling);

/** The placeholders a message names, in order (<CIDR>, <SUGGESTION>). */
export const placeholders = (message: string): string[] =>
  [...message.matchAll(/<([A-Z][A-Z0-9_]*)>/g)].map((m) => m[1]!);

/** The message with its placeholders filled in; a placeholder without a value stays as it is. */
export function fillMessage(message: string, values: Readonly<Record<string, string | number>>): string {
  return message.replace(/<([A-Z][A-Z0-9_]*)>/g, (whole, k: string) =>
    values[k] === undefined ? whole : String(values[k]),
  );
}
