// No import circle anywhere in src/, and the emulator in its layers: records <- store <- context
// <- handlers <- server, each importing only its own layer and those below.
import { describe, expect, it } from 'vitest';
import { findCircles, importGraph, importsOf } from '../support/imports.ts';

describe('reading imports', () => {
  it('finds every kind of import and none in comments, strings or regular expressions', () => {
    const source = [
      "import type { A } from './a.ts';",
      'import {',
      '  b,',
      "} from './b.ts';",
      "export { c } from './c.ts';",
      "export type { D } from './d.ts';",
      "export * from './e.ts';",
      "import './f.ts';",
      "// import x from './comment.ts';",
      "/* import y from './block.ts'; */",
      `const s = "import z from './string.ts'";`,
      'const re = /[\'"]/; const t = \'import("./in-string.ts")\';',
      'const half = total / 2; const path = "a//b";',
      "async function g() { const { h } = await import('./g.ts'); }",
    ].join('\n');
    expect(importsOf(source)).toEqual(['./a.ts', './b.ts', './c.ts', './d.ts', './e.ts', './f.ts', './g.ts']);
  });
});

describe('finding circles', () => {
  const graph = (edges: Record<string, string[]>) => new Map(Object.entries(edges));
  it.each([
    ['none in a chain', { a: ['b'], b: ['c'], c: [] }, []],
    [
      'a circle of three, from its first file',
      { c: ['a'], a: ['b'], b: ['c', 'd'], d: [] },
      [['a', 'b', 'c', 'a']],
    ],
    ['a file that imports itself', { a: ['a'] }, [['a', 'a']]],
    [
      'two circles apart',
      { a: ['b'], b: ['a'], x: ['y'], y: ['x', 'a'] },
      [
        ['a', 'b', 'a'],
        ['x', 'y', 'x'],
      ],
    ],
  ])('%s', (_name, edges, circles) => {
    expect(findCircles(graph(edges)).sort()).toEqual(circles);
  });
});

describe('src/', () => {
  const imports = importGraph('src');

  it('has no import circle', () => {
    // the walk reads the tree (a walk that found nothing would pass vacuously)
    expect(imports.size).toBeGreaterThan(100);
    expect([...imports.values()].flat().length).toBeGreaterThan(300);
    const circles = findCircles(imports).map((c) => c.join(' -> '));
    expect(circles, `import circles:\n${circles.join('\n')}`).toEqual([]);
  });

  /** 0: what every layer may use (errors, ids, defaults, the agent spec...); then the layers. */
  const layer = (file: string): number => {
    const f = file.replace(/^src\/emulator\//, '');
    if (f === 'records.ts') return 1;
    if (f === 'store.ts') return 2;
    if (f === 'context.ts') return 3;
    if (f.startsWith('handlers/')) return 4;
    if (['request.ts', 'http.ts', 'operations.ts', 'admin.ts', 'server.ts', 'index.ts'].includes(f)) return 5;
    return 0;
  };
  const NAMES = ['base', 'records', 'store', 'context', 'handlers', 'server'];

  it('keeps the emulator in layers: records <- store <- context <- handlers <- server', () => {
    const emulator = [...imports].filter(([file]) => file.startsWith('src/emulator/'));
    expect(emulator.map(([f]) => layer(f))).toEqual(expect.arrayContaining([0, 1, 2, 3, 4, 5]));
    const upward = emulator.flatMap(([file, targets]) =>
      targets
        .filter((t) => t.startsWith('src/emulator/') && layer(t) > layer(file))
        .map((t) => `${file} (${NAMES[layer(file)]}) -> ${t} (${NAMES[layer(t)]})`),
    );
    expect(upward).toEqual([]);
  });
});
