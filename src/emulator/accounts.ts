// Accounts of the emulator: the default one (the keys of --api-key and --keys-file) and those
// of --account NAME=KEY, each with its own records and its own request budget. A key belongs
// to one account; what an account's key asks for is looked up in that account only, so an id
// of another account answers as an unknown id does.
import { z } from 'zod';
import { ACCOUNT_NAME, DEFAULT_ACCOUNT, DEFAULT_API_KEY } from './defaults.ts';

/** An API key of the default account: whose it is and whether it may act for others. */
export interface ApiKey {
  key: string;
  ownerId: string;
  admin: boolean;
}

/** `--keys-file`: {keys: [{key, owner_id, admin}]} in YAML or JSON. */
export const KeysFile = z.strictObject({
  keys: z
    .array(
      z.strictObject({
        key: z.string().min(1),
        owner_id: z.string().regex(/^(usr|bot)_[A-Za-z0-9]+$/, 'must be a user (usr_) or bot (bot_) id'),
        admin: z.boolean().default(false),
      }),
    )
    .min(1),
});

/** A key the emulator accepts: whose it is, whether it may act for others, and its account. */
export interface AccountKey extends ApiKey {
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

/**
 * Every key the emulator accepts: the default account's (a plain string is a key owned by
 * usr_emulator with admin rights; none given, DEFAULT_API_KEY), then one per other account,
 * checked (throws AccountError). The default account's first key comes first.
 */
export function accountKeys(
  apiKeys: readonly (ApiKey | string)[] | undefined,
  accounts: Readonly<Record<string, string>> = {},
): AccountKey[] {
  const keys: AccountKey[] = (apiKeys?.length ? apiKeys : [DEFAULT_API_KEY]).map((k) => ({
    ...(typeof k === 'string' ? { key: k, ownerId: 'usr_emulator', admin: true } : k),
    account: DEFAULT_ACCOUNT,
  }));
  const extra = Object.entries(accounts);
  checkAccounts(
    extra,
    keys.map((k) => k.key),
  );
  for (const [account, key] of extra) keys.push({ key, ownerId: 'usr_emulator', admin: true, account });
  return keys;
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
