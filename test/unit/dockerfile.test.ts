// No image can be built on these machines: keep the Dockerfile consistent with the project.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8'));

describe('Dockerfile', () => {
  it('uses the Node major of .nvmrc in every stage, slim', () => {
    const major = readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim();
    const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const f of froms) expect(f).toBe(`node:${major}-slim`);
  });

  it('copies only files that exist', () => {
    for (const m of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const src of m[1]!.split(/\s+/)) expect(existsSync(join(ROOT, src)), src).toBe(true);
    }
  });

  it('runs the build output of the edgectl entrypoint, as `edgectl operator`, as a non-root user', () => {
    const entry = /^ENTRYPOINT \["node", "([^"]+)"\]/m.exec(dockerfile)![1]!;
    expect(entry).toBe(pkg.bin.edgectl);
    // dist/cli/edgectl.js is what tsc makes of src/cli/edgectl.ts
    expect(
      entry.replace(build.compilerOptions.outDir, build.compilerOptions.rootDir).replace(/\.js$/, '.ts'),
    ).toBe('src/cli/edgectl.ts');
    expect(existsSync(join(ROOT, 'src/cli/edgectl.ts'))).toBe(true);
    expect(dockerfile).toMatch(/^CMD \["operator"\]/m);
    expect(dockerfile).toMatch(/^USER 65532:65532/m);
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
  });
});
