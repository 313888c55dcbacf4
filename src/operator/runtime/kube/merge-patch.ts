// The JSON merge patch (RFC 7386) that turns one object into another. A merge patch keeps
// every key it does not name, at any depth: status written as a plain merge would keep what
// a kind no longer reports (a removed module's output, a field the API stopped returning).
import { isDeepStrictEqual } from 'node:util';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keys that go become null at any depth; lists and other values are replaced whole. */
export function mergePatch(from: Obj, to: Obj): Obj {
  const patch: Obj = {};
  for (const k of Object.keys(from)) if (to[k] === undefined && from[k] !== undefined) patch[k] = null;
  for (const [k, v] of Object.entries(to)) {
    if (v === undefined) continue;
    const was = from[k];
    if (isObj(v) && isObj(was)) {
      const sub = mergePatch(was, v);
      if (Object.keys(sub).length) patch[k] = sub;
    } else if (!isDeepStrictEqual(v, was)) patch[k] = v;
  }
  return patch;
}
