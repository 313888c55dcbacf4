// In-memory collections with optional durability: with a data file every acknowledged
// write is appended to a JSON-lines log and fsynced before the response is sent, so a
// kill -9 loses nothing that was answered. The log is compacted at start-up; a record
// that is not JSON or not of its collection's shape (records.ts) stops it. Each account keeps
// its own collections; the default account's lines carry no account (`a`), so a data file of a
// single-account emulator reads as it always did.
import {
  closeSync,
  copyFileSync,
  existsSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { ACCOUNT_NAME, DEFAULT_ACCOUNT } from './defaults.ts';
import { STORED_RECORDS } from './records.ts';
import { firstIssue } from './validation.ts';

export type Rec = Record<string, unknown> & { id: string };
/** A log line: `a` names the account, absent for the default one. */
type Entry = { a?: string; c: string; id: string; rec?: Rec };
type Collections = Map<string, Map<string, Rec>>;

/** A data file that cannot be read whole: starting would silently lose what follows the bad line. */
export class CorruptDataFile extends Error {
  override name = 'CorruptDataFile';
}

/** One emulator per data file: a second would put its compacted copy over the first's open file. */
function lockDataFile(dataFile: string): string {
  const lock = `${dataFile}.lock`;
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      return lock;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const pid = Number(readFileSync(lock, 'utf8'));
    if (pid && pid !== process.pid && alive(pid))
      throw new Error(`data file ${dataFile} is in use by another emulator (process ${pid}): stop it first`);
    // left by one that was killed
    rmSync(lock, { force: true });
  }
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** A log line as the store writes it: a record put ({a?, c, id, rec}) or deleted ({a?, c, id}). */
const LogLine = z.strictObject({
  a: z
    .string()
    .regex(ACCOUNT_NAME, 'must be an account name (lowercase letters, digits and -)')
    .refine((a) => a !== DEFAULT_ACCOUNT, `the default account's records carry no account`)
    .optional(),
  c: z.string(),
  id: z.string().min(1),
  rec: z.looseObject({}).optional(),
});

/** The entry a line holds, or what is wrong with it; `json: false` when it is not even JSON. */
function parseEntry(line: string): { entry: Entry } | { problem: string; json: boolean } {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return { problem: 'not JSON', json: false };
  }
  const parsed = LogLine.safeParse(raw);
  if (!parsed.success) return { problem: firstIssue(parsed.error), json: true };
  const { a, c, id } = parsed.data;
  const at = a === undefined ? {} : { a };
  const shape = Object.hasOwn(STORED_RECORDS, c) ? STORED_RECORDS[c] : undefined;
  if (!shape) return { problem: `c: unknown collection ${JSON.stringify(c)}`, json: true };
  // the record as written, not zod's copy of it
  const rec = (raw as { rec?: Rec }).rec;
  if (rec === undefined) return { entry: { ...at, c, id } };
  const r = shape.safeParse(rec);
  if (!r.success) return { problem: `${c} ${id}: ${firstIssue(r.error, ['rec'])}`, json: true };
  if (rec.id !== id)
    return { problem: `${c} ${id}: rec.id: is ${JSON.stringify(rec.id)}, not ${id}`, json: true };
  return { entry: { ...at, c, id, rec } };
}

export interface StoreOptions {
  /** Keep every valid record of a corrupt file, dropping the bad ones (the original is copied aside first). */
  repair?: boolean;
  /** Told what a repair skipped. */
  warn?: (msg: string) => void;
}

/** One account's collections: what a request of that account reads and writes. */
export class AccountRecords {
  readonly name: string;
  private readonly colls: Collections = new Map();
  private readonly log: (e: Entry) => void;

  constructor(name: string, log: (e: Entry) => void) {
    this.name = name;
    this.log = log;
  }

  coll(name: string): Map<string, Rec> {
    let m = this.colls.get(name);
    if (!m) {
      m = new Map();
      this.colls.set(name, m);
    }
    return m;
  }

  get(c: string, id: string): Rec | undefined {
    return this.colls.get(c)?.get(id);
  }

  all(c: string): Rec[] {
    return [...(this.colls.get(c)?.values() ?? [])];
  }

  put(c: string, rec: Rec): Rec {
    this.log(this.entry(c, rec.id, rec));
    this.coll(c).set(rec.id, rec);
    return rec;
  }

  delete(c: string, id: string): void {
    this.log(this.entry(c, id));
    this.coll(c).delete(id);
  }

  clear(): void {
    for (const [c, m] of this.colls) for (const id of m.keys()) this.log(this.entry(c, id));
    this.colls.clear();
  }

  /** Every record, as log entries (compaction). */
  entries(): Entry[] {
    return [...this.colls].flatMap(([c, m]) => [...m].map(([id, rec]) => this.entry(c, id, rec)));
  }

  private entry(c: string, id: string, rec?: Rec): Entry {
    return {
      ...(this.name === DEFAULT_ACCOUNT ? {} : { a: this.name }),
      c,
      id,
      ...(rec ? { rec } : {}),
    };
  }
}

/**
 * Every account's records and the data file they share. Its own get/all/put/delete act on the
 * default account (what a single-account emulator and its tests use); `account(name)` is another.
 */
export class Store {
  private readonly accounts = new Map<string, AccountRecords>();
  private fd: number | undefined;
  /** The data file's length: where the next record goes. */
  private size = 0;
  /** The lock file held while this store has the data file. */
  private lock?: string;
  /** Where a repair put the original file. */
  backup?: string;

  constructor(dataFile?: string, opts: StoreOptions = {}) {
    if (!dataFile) return;
    this.lock = lockDataFile(dataFile);
    try {
      this.load(dataFile, opts);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** The data file read (every record back in memory), written again compacted, and opened for appends. */
  private load(dataFile: string, opts: StoreOptions): void {
    if (existsSync(dataFile)) {
      const text = readFileSync(dataFile, 'utf8');
      const lines = text.split('\n');
      const bad: { line: number; problem: string }[] = [];
      for (const [i, line] of lines.entries()) {
        if (!line) continue;
        const r = parseEntry(line);
        if ('problem' in r) {
          // a torn last line (no newline after it) is a write that was never acknowledged
          if (r.json || i < lines.length - 1) bad.push({ line: i + 1, problem: r.problem });
          continue;
        }
        const e = r.entry;
        const coll = this.account(e.a).coll(e.c);
        if (e.rec) coll.set(e.id, e.rec);
        else coll.delete(e.id);
      }
      if (bad.length && !opts.repair) {
        const [first] = bad;
        throw new CorruptDataFile(
          `data file ${dataFile}: line ${first!.line} is not a valid record (${first!.problem})${bad.length > 1 ? `, and ${bad.length - 1} more bad line(s)` : ''}; nothing was changed. Start with --repair to keep every valid record (the original is copied aside first)`,
        );
      }
      if (bad.length) {
        this.backup = `${dataFile}.corrupt-${Date.now()}`;
        copyFileSync(dataFile, this.backup);
        const numbers = bad.map((b) => b.line);
        opts.warn?.(
          `data file ${dataFile}: skipped ${bad.length} bad line(s) (${numbers.slice(0, 5).join(', ')}${numbers.length > 5 ? ', ...' : ''}; line ${bad[0]!.line}: ${bad[0]!.problem}); original kept as ${this.backup}`,
        );
      }
    }
    const tmp = `${dataFile}.tmp`;
    const fd = openSync(tmp, 'w');
    for (const account of this.accounts.values())
      for (const e of account.entries()) writeSync(fd, `${JSON.stringify(e)}\n`);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, dataFile);
    // the rename is durable only once the directory is
    const dir = openSync(dirname(dataFile), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
    this.fd = openSync(dataFile, 'a');
    this.size = fstatSync(this.fd).size;
  }

  /** An account's records (made empty on first use). */
  account(name: string = DEFAULT_ACCOUNT): AccountRecords {
    let a = this.accounts.get(name);
    if (!a) {
      a = new AccountRecords(name, (e) => this.log(e));
      this.accounts.set(name, a);
    }
    return a;
  }

  /** The accounts that hold or held records (the data file's too). */
  accountNames(): string[] {
    return [...this.accounts.keys()];
  }

  coll(name: string): Map<string, Rec> {
    return this.account().coll(name);
  }

  get(c: string, id: string): Rec | undefined {
    return this.account().get(c, id);
  }

  all(c: string): Rec[] {
    return this.account().all(c);
  }

  put(c: string, rec: Rec): Rec {
    return this.account().put(c, rec);
  }

  delete(c: string, id: string): void {
    this.account().delete(c, id);
  }

  /** Every account's records gone. */
  clear(): void {
    for (const a of this.accounts.values()) a.clear();
  }

  /**
   * One record appended and on disk before the write it records is answered. A write that does
   * not complete (a full disk) leaves nothing behind to glue the next line onto, and fails.
   */
  private log(e: Entry): void {
    if (this.fd === undefined) return;
    const line = Buffer.from(`${JSON.stringify(e)}\n`);
    const at = this.size;
    try {
      // writeSync may write less than asked
      for (let done = 0; done < line.length; ) done += writeSync(this.fd, line, done, line.length - done);
      fsyncSync(this.fd);
      this.size = at + line.length;
    } catch (err) {
      try {
        ftruncateSync(this.fd, at);
      } catch {
        // the write's own error is the one to report
      }
      throw err;
    }
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    if (this.lock) rmSync(this.lock, { force: true });
    this.lock = undefined;
  }
}
