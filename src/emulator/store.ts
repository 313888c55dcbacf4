// In-memory collections with optional durability: with a data file every acknowledged
// write is appended to a JSON-lines log and fsynced before the response is sent, so a
// kill -9 loses nothing that was answered. The log is compacted at start-up.
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';

export type Rec = Record<string, unknown> & { id: string };
type Entry = { c: string; id: string; rec?: Rec };

/** A data file that cannot be read whole: starting would silently lose what follows the bad line. */
export class CorruptDataFile extends Error {
  override name = 'CorruptDataFile';
}

function parseEntry(line: string): Entry | undefined {
  try {
    const e = JSON.parse(line) as Entry;
    if (e && typeof e === 'object' && typeof e.c === 'string' && typeof e.id === 'string') return e;
  } catch {}
  return undefined;
}

export interface StoreOptions {
  /** Keep every readable record of a corrupt file (the original is copied aside first). */
  repair?: boolean;
  /** Told what a repair skipped. */
  warn?: (msg: string) => void;
}

export class Store {
  private readonly colls = new Map<string, Map<string, Rec>>();
  private fd: number | undefined;
  /** Where a repair put the original file. */
  backup?: string;

  constructor(dataFile?: string, opts: StoreOptions = {}) {
    if (!dataFile) return;
    if (existsSync(dataFile)) {
      const text = readFileSync(dataFile, 'utf8');
      const lines = text.split('\n');
      const bad: number[] = [];
      for (const [i, line] of lines.entries()) {
        if (!line) continue;
        const e = parseEntry(line);
        if (!e) {
          // a torn last line (no newline after it) is a write that was never acknowledged
          if (i < lines.length - 1) bad.push(i + 1);
          continue;
        }
        if (e.rec) this.coll(e.c).set(e.id, e.rec);
        else this.coll(e.c).delete(e.id);
      }
      if (bad.length && !opts.repair) {
        throw new CorruptDataFile(
          `data file ${dataFile}: line ${bad[0]} is not a valid record${bad.length > 1 ? ` (${bad.length} bad lines)` : ''}; nothing was changed. Start with --repair to keep every readable record (the original is copied aside first)`,
        );
      }
      if (bad.length) {
        this.backup = `${dataFile}.corrupt-${Date.now()}`;
        copyFileSync(dataFile, this.backup);
        opts.warn?.(
          `data file ${dataFile}: skipped ${bad.length} unreadable line(s) (${bad.slice(0, 5).join(', ')}${bad.length > 5 ? ', ...' : ''}); original kept as ${this.backup}`,
        );
      }
    }
    const tmp = `${dataFile}.tmp`;
    const fd = openSync(tmp, 'w');
    for (const [c, m] of this.colls)
      for (const [id, rec] of m) writeSync(fd, `${JSON.stringify({ c, id, rec })}\n`);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, dataFile);
    this.fd = openSync(dataFile, 'a');
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
    this.log({ c, id: rec.id, rec });
    this.coll(c).set(rec.id, rec);
    return rec;
  }

  delete(c: string, id: string): void {
    this.log({ c, id });
    this.coll(c).delete(id);
  }

  clear(): void {
    for (const [c, m] of this.colls) for (const id of m.keys()) this.log({ c, id });
    this.colls.clear();
  }

  private log(e: Entry): void {
    if (this.fd === undefined) return;
    writeSync(this.fd, `${JSON.stringify(e)}\n`);
    fsyncSync(this.fd);
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
