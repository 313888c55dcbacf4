// The architecture's rules as a check: the import rules of .dependency-cruiser.cjs (layers,
// the runtime knows no kind, the engine through its facade, no circle with type imports) and
// no source file over MAX_LINES. `node scripts/check-architecture.ts`: one line per breach,
// exit 1. CI runs it; test/unit/architecture.test.ts too.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..');
export const MAX_LINES = 400;

/** Source files over the size a reader takes in at once. */
export function oversized(dir = join(ROOT, 'src')): { file: string; lines: number }[] {
  const out: { file: string; lines: number }[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|mjs)$/.test(e.name)) {
        const lines = readFileSync(p, 'utf8').split('\n').length - 1;
        if (lines > MAX_LINES) out.push({ file: relative(ROOT, p), lines });
      }
    }
  };
  walk(dir);
  return out;
}

/** The import rules' breaches, as dependency-cruiser words them. */
export async function importBreaches(): Promise<string[]> {
  const { cruise } = await import('dependency-cruiser');
  const config = createRequire(import.meta.url)(join(ROOT, '.dependency-cruiser.cjs'));
  const cwd = process.cwd();
  process.chdir(ROOT);
  try {
    // without `validate` the rules are not checked at all: every result would pass
    const result = await cruise(['src'], {
      ...config.options,
      validate: true,
      ruleSet: { forbidden: config.forbidden },
    });
    const output = result.output as {
      summary: {
        violations: { rule: { name: string }; from: string; to: string; cycle?: { name: string }[] }[];
      };
    };
    return output.summary.violations.map(
      (v) =>
        `${v.rule.name}: ${v.from} -> ${v.cycle?.length ? v.cycle.map((c) => c.name).join(' -> ') : v.to}`,
    );
  } finally {
    process.chdir(cwd);
  }
}

if (import.meta.main) {
  const breaches = [
    ...(await importBreaches()),
    ...oversized().map(
      (o) => `file-size: ${o.file} has ${o.lines} lines (at most ${MAX_LINES}): split it by what it holds`,
    ),
  ];
  for (const b of breaches) console.error(b);
  if (breaches.length) process.exit(1);
  console.log('architecture: the import rules hold and no source file is over 400 lines');
}
