// In-memory collections with optional durability: with a data file every acknowledged
// write is appended to a JSON-lines log and fsynced before the response is sent, so a
// kill -9 loses nothing that was answered. The log is compacted at start-up.
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';

export type Rec = Record<string, unknown> & { id: string };
type Entry = { c: string; id: string; rec?: Rec };

export class Store {
  private readonly colls = new Map<string, Map<string, Rec>>();
  private fd: number | undefined;

  constructor(dataFile?: string) {
    if (!dataFile) return;
    if (existsSync(dataFile)) {
      for (const line of readFileSync(dataFile, 'utf8').split('\n')) {
        if (!line) continue;
        let e: Entry;
        try {
          e = JSON.parse(line) as Entry;
        } catch {
          break; // a torn last line: that write was never acknowledged
        }
        if (e.rec) this.coll(e.c).set(e.id, e.rec);
        else this.coll(e.c).delete(e.id);
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
