// The `filter` query parameter of list endpoints: a CEL expression over one resource,
// exposed as `obj` (what the public API documents). What cannot be parsed, or fails on
// every resource, is a 400 naming the parameter: a script listing "only mine" must never
// silently get everything.
import { setFlagsFromString } from 'node:v8';
import { parse } from '@marcbachmann/cel-js';
import { refuse } from './errors.ts';

// `matches` runs the caller's regular expression with JavaScript's backtracking engine: one
// like ^(a+)+$ against a long enough field would hold the event loop, and every account with
// it, for minutes. CEL means RE2, which is linear; V8 switches to its linear engine once a
// match backtracks too much (same answers; what that engine cannot run, back references and
// lookarounds, RE2 has not either).
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

type Item = Record<string, unknown>;

const invalid = (msg: string) => refuse('ERR_INVALID_FILTER', { DETAIL: `filter: ${msg}` });

export function applyFilter(items: Item[], filter: string | undefined): Item[] {
  if (filter === undefined) return items;
  if (!filter.trim()) throw invalid('is empty');
  let expr: ReturnType<typeof parse>;
  try {
    expr = parse(filter);
  } catch (err) {
    throw invalid(`not a valid expression: ${(err as Error).message.split('\n')[0]}`);
  }
  const out: Item[] = [];
  let failures = 0;
  let failure = '';
  for (const obj of items) {
    let v: unknown;
    try {
      v = expr({ obj });
    } catch (err) {
      // a field one resource lacks (an optional one): that resource does not match
      failures++;
      failure = (err as Error).message.split('\n')[0]!;
      continue;
    }
    if (typeof v !== 'boolean') throw invalid(`must be a condition (true or false), got ${typeof v}`);
    if (v) out.push(obj);
  }
  // failed on every resource: it names something no resource has
  if (items.length && failures === items.length) throw invalid(failure);
  return out;
}
