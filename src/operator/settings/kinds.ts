// How a setting's value is read: each kind is its argument in --help, its bounds, and a zod
// schema whose refusal is one line naming the flag and the rule.
import { z } from 'zod';
import { ConfigError } from '../runtime/manager/config-error.ts';
import { parseListen } from '../runtime/manager/listen-address.ts';
import { boundedDuration, boundedNumber, formatMs, parseBool, quote, splitList } from './values.ts';

/** What commander hands over for a flag or env var: a string, true for a bare switch, or nothing. */
export type Raw = string | boolean | undefined;

/** How a setting's value is read: its argument in --help, its bounds, its schema. */
export interface Kind<T> {
  /** `<n>`, `[bool]` (the flag alone means true), or '' for a switch without a value. */
  arg: string;
  /** Bounds or choices, shown in --help and the docs. */
  range?: string;
  /** Numeric bounds (durations in milliseconds), which the chart's values schema repeats. */
  bounds?: { min: number; max: number };
  schema: (flag: string) => z.ZodType<T, Raw>;
}

const RAW = z.union([z.string(), z.boolean()]).optional();

/** A kind from a reader that throws ConfigError: the refusal becomes the zod issue's message. */
export function kind<T>(
  arg: string,
  read: (flag: string, v: Raw) => T,
  range?: string,
  bounds?: { min: number; max: number },
): Kind<T> {
  return {
    arg,
    range,
    bounds,
    schema: (flag) =>
      RAW.transform((v, ctx) => {
        try {
          return read(flag, v);
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          ctx.addIssue({ code: 'custom', message: err.message });
          return z.NEVER;
        }
      }),
  };
}

export const str = (v: Raw) => (typeof v === 'string' ? v : String(v ?? ''));
/** A string; empty means unset. */
export const text = (arg: string, check?: (flag: string, v: string) => void) =>
  kind(arg, (flag, v) => {
    const s = str(v);
    if (!s) return undefined;
    check?.(flag, s);
    return s;
  });
export const list = (check?: (flag: string, item: string) => void) =>
  kind('<list>', (flag, v) => {
    const items = splitList(str(v));
    for (const item of items) check?.(flag, item);
    return items;
  });
export const bool = (fallback: boolean) => kind('[bool]', (flag, v) => parseBool(flag, v, fallback));
/** Unset stays unset: the default depends on other settings. */
export const optionalBool = kind('[bool]', (flag, v) =>
  v === undefined ? undefined : parseBool(flag, v, true),
);
export const switchOnly = kind('', (_flag, v) => v === true);
export const whole = (arg: string, min: number, max: number) =>
  kind(arg, (flag, v) => boundedNumber(flag, str(v), min, max, true), `${min}..${max}`, { min, max });
/** A whole number, or unset (its default depends on other settings). */
export const optionalWhole = (arg: string, min: number, max: number) =>
  kind(
    arg,
    (flag, v) => (v === undefined || v === '' ? undefined : boundedNumber(flag, str(v), min, max, true)),
    `${min}..${max}`,
    { min, max },
  );
export const duration = (min: number, max: number, zero = false) =>
  kind(
    '<duration>',
    (flag, v) => boundedDuration(flag, str(v), min, max, zero),
    min === 0 ? `0..${formatMs(max)}` : `${formatMs(min)}..${formatMs(max)}${zero ? ', 0: off' : ''}`,
    { min, max },
  );
export function oneOf<const V extends string>(arg: string, values: readonly V[]) {
  return kind(
    arg,
    (flag, v) => {
      const s = str(v);
      if (!values.includes(s as V))
        throw new ConfigError(`${flag}: ${quote(s)} is not one of ${values.join(', ')}`);
      return s as V;
    },
    values.join(', '),
  );
}
export const address = kind('<host:port>', (flag, v) => {
  parseListen(flag, str(v));
  return str(v);
});
