// docs/reference.md names every condition reason, Event reason and metric the code can
// produce: the sets are read from the code (src/operator, the metrics registry, the emulator's
// /metrics), not kept by hand, so a new reason or metric fails here until it is documented.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { createMetrics } from '../../src/operator/runtime/metrics.ts';
import { BEGIN, END, REFERENCE } from '../../src/operator/settings/docs.ts';

const SRC = join(REPO_ROOT, 'src');

const tsFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );

/** Quoted CamelCase words in a piece of code: `'APIRejected'`, `cond ? 'A' : 'B'`. */
const literals = (code: string) => [...code.matchAll(/'([A-Z][A-Za-z]+)'/g)].map((m) => m[1]!);

/**
 * Where a reason is written in src/operator: the first argument of stalled()/stallWith() (the
 * engine's and the account reconciler's), a `reason:` property or type (a Phase, a plan's
 * decision, an Event to record, a condition), the reason argument of an Event's record(), and
 * a comparison with a reason. The matched text may hold a conditional (`a ? 'X' : 'Y'`) or a
 * union (`'X' | 'Y'`): every quoted word in it counts.
 */
const REASON_SITES = [
  /\b(?:stalled|stallWith)\(\s*([^,]+),/g,
  /\breason\??:\s*([^,;}\n]+)/g,
  /\.record\(\s*[^,]+,\s*[^,]+,\s*([^,]+),/g,
  /\breason\s*[!=]==\s*('[A-Za-z]+')/g,
];

/** Quoted words at those sites that are not a condition's or an Event's reason. */
const NOT_REASONS = new Set([
  // the API server's reason for a CEL rule of the CRD schemas (immutable fields), not the operator's
  'FieldValueForbidden',
]);

function reasonsInCode(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of tsFiles(join(SRC, 'operator'))) {
    const code = readFileSync(file, 'utf8');
    for (const re of REASON_SITES)
      for (const m of code.matchAll(re))
        for (const r of literals(m[1]!))
          if (!NOT_REASONS.has(r) && !found.has(r)) found.set(r, relative(REPO_ROOT, file));
  }
  return found;
}

/** Condition types, from the Condition interface. */
function conditionTypes(): string[] {
  const code = readFileSync(join(SRC, 'operator/runtime/bindings/conditions.ts'), 'utf8');
  const union = code.match(/\btype:\s*('[A-Za-z]+'(?:\s*\|\s*'[A-Za-z]+')*);/)?.[1] ?? '';
  return literals(union);
}

/** The operator's metrics: its registry, without prom-client's process and Node.js defaults. */
async function operatorMetrics(): Promise<{ own: string[]; defaults: string[] }> {
  const fresh = new Registry();
  collectDefaultMetrics({ register: fresh });
  const defaults = (await fresh.getMetricsAsJSON()).map((m) => m.name);
  const all = (await createMetrics().registry.getMetricsAsJSON()).map((m) => m.name);
  return { own: all.filter((n) => !defaults.includes(n)), defaults };
}

/** Metrics written as Prometheus text by hand (the emulator's /metrics). */
const handWrittenMetrics = () =>
  tsFiles(SRC).flatMap((f) =>
    [...readFileSync(f, 'utf8').matchAll(/# TYPE ([a-z_:][a-z0-9_:]*) /g)].map((m) => m[1]!),
  );

const page = readFileSync(REFERENCE, 'utf8');
/** The page without its generated flag table (which names reasons only in passing). */
const prose = page.slice(0, page.indexOf(BEGIN)) + page.slice(page.indexOf(END) + END.length);
const section = (title: string) => {
  const from = prose.indexOf(`\n## ${title}\n`);
  if (from < 0) throw new Error(`docs/reference.md has no section "## ${title}"`);
  const to = prose.indexOf('\n## ', from + 1);
  return prose.slice(from, to < 0 ? undefined : to);
};
/** The identifiers inside the code spans of some markdown: `Stalled/NoAccount`, `x_total{kind}`. */
const codeTokens = (md: string) =>
  new Set([...md.matchAll(/`([^`\n]+)`/g)].flatMap((m) => m[1]!.split(/[^A-Za-z0-9_*]+/)));

describe('docs/reference.md', () => {
  const reasons = reasonsInCode();
  const documented = codeTokens(section('Conditions and reasons') + section('Events'));

  it('the code scan finds the reasons (each kind of site)', () => {
    // one of each: stalled(), stallWith(), a reason: conditional, a record() literal, an account's
    for (const r of ['APIRejected', 'Conflict', 'DriftCorrected', 'ReconcileResumed', 'KeyRefused'])
      expect([...reasons.keys()]).toContain(r);
    expect(reasons.size).toBeGreaterThan(50);
  });

  it('every condition reason and Event reason the operator writes is in a code span of "Conditions and reasons" or "Events"', () => {
    const missing = [...reasons].filter(([r]) => !documented.has(r)).map(([r, file]) => `${r} (${file})`);
    expect(missing, 'add them to docs/reference.md').toEqual([]);
  });

  it('every condition type is named', () => {
    const types = conditionTypes();
    expect(types).toEqual(expect.arrayContaining(['Ready', 'Reconciling', 'Stalled']));
    for (const t of types) expect(documented.has(t), t).toBe(true);
  });

  it('every metric the operator registers is in a code span of "Metrics"; the process defaults by prefix', async () => {
    const metrics = codeTokens(section('Metrics'));
    const { own, defaults } = await operatorMetrics();
    expect(own).toContain('edge_operator_events_total');
    expect(
      own.filter((m) => !metrics.has(m)),
      'add them to the metrics table of docs/reference.md',
    ).toEqual([]);
    const byPrefix = (m: string) =>
      [...metrics].some((t) => t.endsWith('_*') && m.startsWith(t.slice(0, -1)));
    expect(defaults.length).toBeGreaterThan(0);
    expect(defaults.filter((m) => !metrics.has(m) && !byPrefix(m))).toEqual([]);
  });

  it('every metric written by hand (the emulator\'s) is in "Metrics"', () => {
    const written = handWrittenMetrics();
    expect(written).toContain('emulator_requests_total');
    const metrics = codeTokens(section('Metrics'));
    expect(
      written.filter((m) => !metrics.has(m)),
      'add them to docs/reference.md',
    ).toEqual([]);
  });

  it('only src/operator/runtime/metrics.ts registers prom-client metrics (the registry above is all of them)', () => {
    const elsewhere = tsFiles(SRC)
      .filter((f) => f !== join(SRC, 'operator/runtime/metrics.ts'))
      .filter((f) =>
        /from 'prom-client'|new (?:Gauge|Counter|Histogram|Summary)\(/.test(readFileSync(f, 'utf8')),
      )
      .map((f) => relative(REPO_ROOT, f));
    expect(elsewhere).toEqual([]);
  });
});
