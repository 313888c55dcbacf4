// The settings table is the one place a setting is declared: the flags and --help, the docs'
// flag table and the chart's env vars and values schema must agree with it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { operatorCommand } from '../../src/cli/commands/operator.ts';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { readConfig } from '../../src/operator/config.ts';
import { REFERENCE, renderFlagTable, withFlagTable } from '../../src/operator/settings/docs.ts';
import { attributeOf, SETTINGS, type Setting } from '../../src/operator/settings/table.ts';

const ALL = Object.entries(SETTINGS) as [string, Setting<unknown>][];
const CHART = join(REPO_ROOT, 'helm/edge-operator');

describe('settings table', () => {
  it('docs/reference.md has the flag table `npm run docs` renders (run it after changing a setting)', () => {
    const page = readFileSync(REFERENCE, 'utf8');
    expect(page).toBe(withFlagTable(page));
    for (const [, s] of ALL) expect(renderFlagTable()).toContain(`| \`${s.flag}\` |`);
  });

  it('--help lists every setting with its env var, and the command takes nothing else', () => {
    const cmd = operatorCommand();
    const options = cmd.options.filter((o) => o.long !== '--help');
    expect(options.map((o) => o.long)).toEqual(ALL.map(([, s]) => s.flag));
    for (const [, s] of ALL) {
      const o = options.find((x) => x.long === s.flag)!;
      expect(o.envVar, s.flag).toBe(s.env);
      expect(o.attributeName(), s.flag).toBe(attributeOf(s.flag));
    }
    // backticks are markdown, not --help
    expect(cmd.helpInformation()).not.toContain('`');
  });

  it('the defaults pass their own checks: no flag and no env var is a working configuration', () => {
    const c = readConfig({});
    expect(c).toMatchObject({
      concurrency: 4,
      resyncMs: 600_000,
      apiRatePerMinute: 120,
      apiTimeoutMs: 10_000,
      drainMs: 30_000,
      agentMetricsMs: 60_000,
      watchIdleMs: 180_000,
      namespaces: [],
      defaultAccount: true,
      emulator: false,
      local: false,
      leaderElect: undefined,
      leaderElectionId: 'edge-operator',
      logLevel: 'info',
    });
    expect(c.listen).toMatch(/:8080$/);
  });

  it('every env var the chart sets is a setting', () => {
    const deployment = readFileSync(join(CHART, 'templates/deployment.yaml'), 'utf8');
    const env = new Set(ALL.flatMap(([, s]) => (s.env ? [s.env] : [])));
    // NODE_OPTIONS is Node's own (the heap limit), not the operator's
    const set = [...deployment.matchAll(/\{name: ([A-Z_]+),/g)]
      .map((m) => m[1]!)
      .filter((e) => e !== 'NODE_OPTIONS');
    expect(set.length).toBeGreaterThan(10);
    expect(set.filter((e) => !env.has(e))).toEqual([]);
  });

  it("each setting's chart value exists, and the values schema repeats its bounds", () => {
    const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8'));
    const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8'));
    let compared = 0;
    for (const [, s] of ALL) {
      if (!s.chart) continue;
      const value = s.chart.split('.').reduce<unknown>((n, k) => (n as Record<string, unknown>)?.[k], values);
      expect(value, `${s.flag}: chart value ${s.chart}`).not.toBeUndefined();
      const prop = s.chart
        .split('.')
        .reduce<Record<string, unknown> | undefined>(
          (n, k) => (n?.properties as Record<string, Record<string, unknown>> | undefined)?.[k],
          schema,
        );
      if (s.kind.bounds && prop?.type === 'integer') {
        expect([prop.minimum, prop.maximum], s.flag).toEqual([s.kind.bounds.min, s.kind.bounds.max]);
        compared++;
      }
      if (s.kind.range && typeof prop?.description === 'string' && /^\d/.test(prop.description)) {
        expect(prop.description, s.flag).toBe(s.kind.range);
        compared++;
      }
    }
    expect(compared).toBeGreaterThanOrEqual(4);
  });
});
