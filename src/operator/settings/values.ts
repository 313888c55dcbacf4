// The rules a setting's value follows, each refusal one line naming the flag and the rule.
// Plain decimal only: what Number() or a YAML parser would also take (1e1, 0x10, " 4", +4,
// Infinity) is a typo or a template rendering a float.
import { ConfigError } from '../runtime/manager/config-error.ts';

/** A value quoted for an error message: control characters escaped, so the message stays one line. */
export const quote = (v: string) => JSON.stringify(v);

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/**
 * Plain decimal only: digits, a fraction with s, m or h (1.5m), a unit (ms, s, m, h; none:
 * seconds). No sign, exponent, hex, spaces or leading dot; a whole number of milliseconds.
 */
export function parseDuration(s: string, flag = 'duration'): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(s);
  const unit = (m?.[2] ?? 's') as keyof typeof UNIT_MS;
  const ms = m ? Number(m[1]) * UNIT_MS[unit] : Number.NaN;
  if (!m || !Number.isFinite(ms) || Math.abs(ms - Math.round(ms)) > 1e-6)
    throw new ConfigError(
      `${flag}: not a duration: ${quote(s)} (plain decimal with a unit, e.g. 30s, 1.5m, 1h, 500ms; whole milliseconds)`,
    );
  return Math.round(ms);
}

/** Milliseconds as people write them: 10s, 5m, 24h. */
export const formatMs = (ms: number) =>
  ms === 0
    ? '0'
    : ms % 3_600_000 === 0
      ? `${ms / 3_600_000}h`
      : ms % 60_000 === 0
        ? `${ms / 60_000}m`
        : `${ms / 1000}s`;

/** A duration within bounds; `zero` allows 0 as "off". */
export function boundedDuration(flag: string, value: string, min: number, max: number, zero = false): number {
  const ms = parseDuration(value, flag);
  if (zero && ms === 0) return 0;
  if (ms < min || ms > max)
    throw new ConfigError(
      `${flag}: ${value} is out of range (${formatMs(min)} to ${formatMs(max)}${zero ? ', or 0 for off' : ''})`,
    );
  return ms;
}

/**
 * A number within bounds, in plain decimal only: digits, and a fraction unless `integer`
 * (no sign, exponent, hex, spaces, leading dot or Infinity).
 */
export function boundedNumber(
  flag: string,
  value: string,
  min: number,
  max: number,
  integer = false,
): number {
  if (!(integer ? /^\d+$/ : /^\d+(?:\.\d+)?$/).test(value))
    throw new ConfigError(
      integer
        ? `${flag}: not a whole number: ${quote(value)} (digits only, e.g. ${min})`
        : `${flag}: not a number: ${quote(value)} (plain decimal, e.g. ${min} or ${min}.5)`,
    );
  const n = Number(value);
  if (!(n >= min && n <= max)) throw new ConfigError(`${flag}: ${value} is out of range (${min} to ${max})`);
  return n;
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);
/** Booleans from flags and environment variables, strictly: a typo is an error, not "false". */
export function parseBool(flag: string, value: string | boolean | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (typeof value === 'boolean') return value;
  const v = value.trim().toLowerCase();
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  throw new ConfigError(`${flag}: expected true or false (or yes/no, 1/0), got ${quote(value)}`);
}

/** An http or https URL. */
export function isHttpUrl(s: string): boolean {
  try {
    return /^https?:$/.test(new URL(s).protocol);
  } catch {
    return false;
  }
}

/** A comma-separated list, blanks dropped. */
export const splitList = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** An API key travels in an Authorization header: printable ASCII without spaces. */
const API_KEY = /^[!-~]+$/;

/** Refuses a key that cannot be one, without ever printing it. */
export function checkApiKey(key: string, source: string): string {
  if (API_KEY.test(key)) return key;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for exactly those
  const what = /[\x00-\x1f\x7f]/.test(key)
    ? 'a control character (such as a newline)'
    : 'a space or a non-ASCII character';
  throw new ConfigError(
    `${source} contains ${what}; a key is printable ASCII without spaces (the key is not shown)`,
  );
}
