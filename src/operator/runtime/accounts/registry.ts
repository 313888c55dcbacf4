// The accounts the operator holds clients for: identity -> client, URL, budget and the
// bulk observation of each kind. A rotated key gets a new client on the same budget, used from
// the next request, and nothing else changes. A client is closed when its account goes.
// The API's budget is its account's, and an API account is a key: account objects with the same
// URL and key (a tenant's many EdgeAccounts on one Secret) share the first one's entry (one
// client, one budget, one observation per kind, one poll, one set of metric series) as aliases.
import { createHash } from 'node:crypto';
import type { EdgeClient } from '../../../api/client.ts';
import type { CallEvent } from '../../../api/transport.ts';
import type { Phase } from '../bindings/conditions.ts';
import { Budget } from '../scheduler/budget.ts';
import type { Observer } from '../state/observer.ts';
import { describeAccount, INSTALLATION } from './resolve.ts';

export interface ClientFactory {
  /** A client for the account's URL and key on the account's budget; `onCall` counts its requests. */
  client(o: {
    account: string;
    url: string;
    key: string;
    budget: Budget;
    onCall: (e: CallEvent) => void;
  }): EdgeClient;
  /** The bulk observation of a kind in an account (its list reads the account's current client). */
  observer?(account: string, kind: string, client: () => EdgeClient): Observer;
  /** An account is held now (its metrics series start), and when it went (they go with it). */
  added?(account: string): void;
  removed?(account: string): void;
}

export interface AccountEntry {
  readonly id: string;
  url: string;
  client: EdgeClient;
  budget: Budget;
  /** A digest of the key in use (never the key): a changed Secret is a rotation. */
  keyDigest: string;
  /** Whether objects may use it now; otherwise why not (the account's condition). */
  usable: boolean;
  /**
   * The API took this client's key once: deletes may still use it when the account cannot
   * serve otherwise (its Secret deleted in the same sweep as its objects).
   */
  verified: boolean;
  /**
   * The client of the last key the API accepted, kept while a newer key is not yet accepted
   * (a rotation to a key that is wrong, or not checked yet): deletes go on with it.
   */
  lastGood?: EdgeClient;
  phase?: Phase;
  /** Refused (401, 403) since it was last checked: told to onRefused, not yet checked again. */
  suspect?: boolean;
  readonly observers: Map<string, Observer>;
  /** Request and 429 times of the last minute. */
  readonly recent: { at: number; throttled: boolean }[];
}

const digest = (url: string, key: string) =>
  createHash('sha256').update(url).update('\0').update(key).digest('hex');
const MINUTE = 60_000;
function noteCall(recent: AccountEntry['recent'], status: number): void {
  const now = Date.now();
  recent.push({ at: now, throttled: status === 429 });
  while (recent.length && recent[0]!.at < now - MINUTE) recent.shift();
}

export class AccountRegistry {
  private readonly entries = new Map<string, AccountEntry>();
  /** An account sharing another's entry (same URL and key) -> that account. */
  private readonly aliases = new Map<string, string>();
  /** Accounts that shared an entry which went or changed key: they must be set again. */
  onUnshared?: (ids: string[]) => void;
  private readonly factory: ClientFactory;
  /**
   * The API refused (401, 403) the key of an account taken as usable: revoked since it was checked.
   * Told once per check (the account controller checks the key again).
   */
  onRefused?: (id: string) => void;
  /**
   * An account's budget served a caller, one of its lists ended, or its entry went, changed
   * budget or stopped being shared: work kept back for it may go now.
   */
  onRoom?: (id: string) => void;

  constructor(factory: ClientFactory) {
    this.factory = factory;
  }

  /** Registers a client made elsewhere (the installation's, built from the flags). */
  adopt(id: string, url: string, client: EdgeClient, budget: Budget): AccountEntry {
    budget.onRoom = () => this.onRoom?.(id);
    const e: AccountEntry = {
      id,
      url,
      client,
      budget,
      keyDigest: '',
      usable: true,
      verified: true,
      observers: new Map(),
      recent: [],
    };
    this.entries.set(id, e);
    this.factory.added?.(id);
    return e;
  }

  /**
   * The account's client for this URL, key and budget: made the first time, replaced when the
   * key or URL changed (on the same budget, unless the budget changed). The old client
   * finishes what it has in flight and is closed: at once if the API never took its key, else
   * once it takes the new one (until then deletes go on with the old key).
   */
  set(id: string, o: { url: string; key: string; perMinute: number }): 'new' | 'rotated' | 'same' {
    this.refusals.delete(id);
    const d = digest(o.url, o.key);
    const alias = this.aliases.get(id);
    if (alias !== undefined) {
      // the key's budget is the first account's: another rateLimitPerMinute does not split it
      if (this.entries.get(alias)?.keyDigest === d) return 'same';
      this.aliases.delete(id);
    }
    const e = this.entries.get(id);
    if (e && e.keyDigest === d && e.budget.perMinute === o.perMinute) return 'same';
    // a key another account already holds: share its entry, unless this one has others sharing it
    const holder = !e && [...this.entries.values()].find((x) => x.keyDigest === d);
    if (holder) {
      this.aliases.set(id, holder.id);
      return 'same';
    }
    // another key: what shared this entry keeps the old key, so it goes its own way
    if (e && e.keyDigest !== d) this.unshare(id);
    const budget =
      e && e.budget.perMinute === o.perMinute ? e.budget : new Budget({ perMinute: o.perMinute });
    budget.onRoom = () => this.onRoom?.(id);
    const recent = e?.recent ?? [];
    const client = this.factory.client({
      account: id,
      url: o.url,
      key: o.key,
      budget,
      onCall: (c) => {
        noteCall(recent, c.status);
        const now = this.entries.get(id);
        // the API answers a key it does not know (revoked) 403, as a missing one 401
        if ((c.status === 401 || c.status === 403) && now?.client === client && now.usable && !now.suspect) {
          now.suspect = true;
          this.onRefused?.(id);
        }
      },
    });
    // a new budget: what waited for the old one looks again
    if (e && e.budget !== budget) queueMicrotask(() => this.onRoom?.(id));
    if (e) {
      const old = e.client;
      e.client = client;
      e.budget = budget;
      e.url = o.url;
      e.keyDigest = d;
      // the old key, if the API took it, serves deletes until the new one is accepted
      if (e.verified) e.lastGood = old;
      else void old.close().catch(() => {});
      e.verified = false;
      return 'rotated';
    }
    this.entries.set(id, {
      id,
      url: o.url,
      client,
      budget,
      keyDigest: d,
      usable: false,
      verified: false,
      phase: { state: 'progressing', reason: 'Verifying', message: 'checking the key with one API request' },
      observers: new Map(),
      recent,
    });
    this.factory.added?.(id);
    return 'new';
  }

  /** Counts a request of a client made elsewhere (the installation's). */
  noteCall(id: string, status: number): void {
    const e = this.get(id);
    if (e) noteCall(e.recent, status);
  }

  get(id: string): AccountEntry | undefined {
    return this.entries.get(this.aliases.get(id) ?? id);
  }

  /** The account whose entry `id` shares (itself when it holds its own). */
  holderOf(id: string): string {
    return this.aliases.get(id) ?? id;
  }

  /** The accounts sharing this entry no longer do: each is set again (told to onUnshared). */
  private unshare(holder: string): void {
    const ids = [...this.aliases].filter(([, h]) => h === holder).map(([a]) => a);
    for (const a of ids) this.aliases.delete(a);
    if (ids.length) this.onUnshared?.(ids);
    for (const a of ids) this.onRoom?.(a);
  }

  /** Accounts held now. */
  get size(): number {
    return this.entries.size;
  }

  all(): AccountEntry[] {
    return [...this.entries.values()];
  }

  /**
   * Why accounts that hold no entry cannot serve (a limit, a URL refused before any key was
   * read): their objects say so instead of "not checked yet". Only a phase: no client.
   */
  private readonly refusals = new Map<string, Phase>();

  /** Whether objects may use the account, and why not. */
  mark(id: string, usable: boolean, phase?: Phase): void {
    // an account sharing another's entry refuses nothing for it: refused (its limit, its URL,
    // its Secret), it stops sharing and says why on its own; the key accepted holds for both
    if (this.aliases.has(id) && !usable) this.aliases.delete(id);
    const e = this.get(id);
    // the holder refused for what may be its own (its limit, its URL): the others go their own way
    if (e && !usable && e.id === id) this.unshare(id);
    if (!e) {
      if (!usable && phase) this.refusals.set(id, phase);
      return;
    }
    this.refusals.delete(id);
    e.usable = usable;
    e.phase = phase;
    e.suspect = false;
    if (usable) {
      e.verified = true;
      void e.lastGood?.close().catch(() => {});
      e.lastGood = undefined;
    }
  }

  /** The kind's bulk observation in the account, made when first asked for. */
  observer(id: string, kind: string): Observer | undefined {
    const e = this.get(id);
    if (!e || !this.factory.observer) return undefined;
    let o = e.observers.get(kind);
    if (!o) {
      o = this.factory.observer(e.id, kind, () => e.client);
      e.observers.set(kind, o);
    }
    return o;
  }

  /**
   * The client for an object of the account, or why it must wait. A delete takes the last key
   * the API accepted even while the account cannot serve otherwise: "the key is gone" never
   * strands a remote resource.
   */
  use(id: string, forDelete = false): { client: EdgeClient; entry: AccountEntry } | { phase: Phase } {
    const e = this.get(id);
    if (e?.usable || (forDelete && e?.verified)) return { client: e.client, entry: e };
    if (forDelete && e?.lastGood) return { client: e.lastGood, entry: e };
    const phase = e?.phase ?? this.refusals.get(id);
    const why = phase ? `${phase.reason}: ${phase.message}` : 'not checked yet';
    return {
      phase: {
        state: 'progressing',
        reason: 'WaitingForAccount',
        message: `waiting for ${describeAccount(id)} to be Ready (${why})`,
      },
    };
  }

  /** Requests and 429s of the account in the last minute. */
  lastMinute(id: string, now = Date.now()): { requests: number; throttled: number } {
    const recent = (this.get(id)?.recent ?? []).filter((r) => r.at >= now - MINUTE);
    return { requests: recent.length, throttled: recent.filter((r) => r.throttled).length };
  }

  /** The account went: its client is closed (the installation's is the operator's to close). */
  /** `graceMs`: how long its requests in flight may still take (see Transport.close). */
  async remove(id: string, graceMs?: number): Promise<void> {
    this.refusals.delete(id);
    // an account sharing another's entry holds nothing of its own
    if (this.aliases.delete(id)) return;
    const e = this.entries.get(id);
    if (!e) return;
    // those sharing it make an entry of their own (their metric series are their own then)
    this.unshare(id);
    this.entries.delete(id);
    this.factory.removed?.(id);
    // what waited for its budget waits for nothing now (its objects say why when they run)
    this.onRoom?.(id);
    void e.lastGood?.close(graceMs).catch(() => {});
    if (id !== INSTALLATION) await e.client.close(graceMs).catch(() => {});
  }

  async closeAll(graceMs?: number): Promise<void> {
    for (const id of [...this.entries.keys()]) await this.remove(id, graceMs);
  }
}
