// What every benchmark result says about where it ran, and where results are written.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';

export const machine = () => ({
  cpus: cpus().length,
  cpu: cpus()[0]?.model,
  memory_gib: Math.round(totalmem() / 2 ** 30),
  node: process.version,
});

/** HEAD, and `+changes` when what the operator is built from differs from it (an uncommitted tree ran). */
export const commit = () => {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const changed = execFileSync(
      'git',
      ['status', '--porcelain', '--', 'src', 'scripts', 'package.json', 'package-lock.json', 'Dockerfile'],
      { encoding: 'utf8' },
    ).trim();
    return changed ? `${head}+changes` : head;
  } catch {
    return undefined;
  }
};

/** Writes test/bench/results/<name>.json and prints it. */
export function writeResult(name: string, result: object): void {
  const out = join(import.meta.dirname, 'results');
  mkdirSync(out, { recursive: true });
  const text = `${JSON.stringify(result, null, 2)}\n`;
  writeFileSync(join(out, `${name}.json`), text);
  process.stdout.write(text);
}

/**
 * The figures a result about to be written under `name` replaces (the previous run's: often the
 * previous commit's), to print beside the new ones; `paths` name them, nested with dots
 * (`memory.rss_mib`). Nothing when there is no earlier result.
 */
export function previousResult(name: string, paths: string[]): { previous?: Record<string, unknown> } {
  const file = join(import.meta.dirname, 'results', `${name}.json`);
  if (!existsSync(file)) return {};
  const before = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const at = (path: string) =>
    path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], before);
  return {
    previous: Object.fromEntries(
      ['date', 'commit', ...paths].flatMap((p) => (at(p) === undefined ? [] : [[p, at(p)]])),
    ),
  };
}
