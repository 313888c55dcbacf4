// Accounts of the emulator: the default one (the keys of --api-key and --keys-file) and those
// of --account NAME=KEY, each with its own records and its own request budget. A key belongs
// to one account; what an account's key asks for is looked up in that account only, so an id
// of another account answers as an unknown id does.
import { ACCOUNT_NAME, DEFAULT_ACCOUNT } from './defaults.ts';

/** A key the emulator accepts: whose it is, whether it may act for others, and its account. */
export interface AccountKey {
  key: string;
  ownerId: string;
  admin: boolean;
  account: string;
}

/** A bad account name or key; the message names the account, never the key. */
export class AccountError extends Error {
  override name = 'AccountError';
}

/** An API key is printable ASCII without spaces: what the Authorization header can carry. */
const KEY = /^[\x21-\x7e]+$/;

/**
 * Checks accounts given as [name, key] pairs (in the order given) against each other and the
 * default account's keys. `label` says how a message names an account (`--account blue`).
 */
export function checkAccounts(
  pairs: readonly (readonly [string, string])[],
  defaultKeys: readonly string[],
  label: (name: string) => string = (n) => `account ${JSON.stringify(n)}`,
): void {
  const owner = new Map<string, string>(defaultKeys.map((k) => [k, DEFAULT_ACCOUNT]));
  const names = new Set<string>();
  for (const [name, key] of pairs) {
    const at = label(name);
    if (!name) throw new AccountError(`${at}: the name is empty (expected NAME=KEY)`);
    if (name === DEFAULT_ACCOUNT)
      throw new AccountError(
        `${at}: "${DEFAULT_ACCOUNT}" is the account of --api-key and --keys-file; choose another name`,
      );
    if (!ACCOUNT_NAME.test(name))
      throw new AccountError(
        `${at}: the name must be lowercase letters, digits and "-", start and end with a letter or digit, at most 63 characters`,
      );
    if (names.has(name)) throw new AccountError(`${at}: the name is given twice`);
    names.add(name);
    if (!key) throw new AccountError(`${at}: the key is empty (expected NAME=KEY)`);
    if (!KEY.test(key)) throw new AccountError(`${at}: the key must be printable ASCII without spaces`);
    const other = owner.get(key);
    if (other !== undefined) throw new AccountError(`${at}: its key is already the key of account ${other}`);
    owner.set(key, name);
  }
}

/** `--account NAME=KEY` values, in order: the accounts they name, checked (throws AccountError). */
export function parseAccountFlags(
  specs: readonly string[],
  defaultKeys: readonly string[],
): Record<string, string> {
  const pairs = specs.map((spec) => {
    const eq = spec.indexOf('=');
    // the value holds a key: a message quotes at most the part before "="
    if (eq < 0) throw new AccountError(`--account: expected NAME=KEY, got a value without "="`);
    return [spec.slice(0, eq), spec.slice(eq + 1)] as const;
  });
  checkAccounts(pairs, defaultKeys, (n) => (n ? `--account ${n}` : '--account'));
  return Object.fromEntries(pairs);
}

/** A rolling 60-second window per account and key owner: at most `perMinute` requests in any minute. */
export class AccountLimiter {
  private readonly perMinute: number;
  private readonly windows = new Map<string, number[]>();
  constructor(perMinute: number) {
    this.perMinute = perMinute;
  }
  /** undefined: admitted; otherwise the seconds until a request would be. */
  admit(account: string, owner: string, now = Date.now()): number | undefined {
    const k = `${account}\t${owner}`;
    const w = this.windows.get(k) ?? [];
    this.windows.set(k, w);
    while (w.length && w[0]! <= now - 60_000) w.shift();
    if (w.length >= this.perMinute) return Math.max(1, Math.ceil((w[0]! + 60_000 - now) / 1000));
    w.push(now);
    return undefined;
  }
}
