// The import graph of a source tree, read as text (no compiler): every `import ... from`,
// `export ... from`, `import '...'` and `import('...')`, type-only ones too, between files of the
// tree; and the circles in it. Comments, strings and regular expressions are skipped, so an
// import written inside one of them is not taken for a real one.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** Where a `/` starts a regular expression rather than a division. */
const BEFORE_REGEX =
  /(^|[(,=:[!&|?{};+\-*%<>~^]|\b(return|typeof|case|do|else|in|of|new|delete|void|throw|yield|await))\s*$/;

/**
 * The source with comments blanked and each string, template and regular expression literal
 * replaced by a placeholder: `"#n"` for the n-th string (its text in `strings`), `/r/` for a regex.
 */
function mask(source: string): { code: string; strings: string[] } {
  const strings: string[] = [];
  let code = '';
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      while (i < source.length && source[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      i = end < 0 ? source.length : end + 2;
      code += ' ';
    } else if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      while (j < source.length && source[j] !== c) j += source[j] === '\\' ? 2 : 1;
      strings.push(source.slice(i + 1, j));
      code += `"#${strings.length - 1}"`;
      i = j + 1;
    } else if (c === '/' && BEFORE_REGEX.test(code.slice(-40))) {
      let j = i + 1;
      let inClass = false;
      while (j < source.length && source[j] !== '\n' && (inClass || source[j] !== '/')) {
        if (source[j] === '\\') j++;
        else if (source[j] === '[') inClass = true;
        else if (source[j] === ']') inClass = false;
        j++;
      }
      code += '/r/';
      i = j + 1;
    } else {
      code += c;
      i++;
    }
  }
  return { code, strings };
}

const STATIC = /(?:^|[;}\n])\s*(?:import|export)\b[^;"]*?\bfrom\s*"#(\d+)"/g;
const BARE = /(?:^|[;}\n])\s*import\s*"#(\d+)"/g;
const DYNAMIC = /\bimport\s*\(\s*"#(\d+)"\s*[,)]/g;

/** The module specifiers a source file imports, in the order found (static first, then dynamic). */
export function importsOf(source: string): string[] {
  const { code, strings } = mask(source);
  return [STATIC, BARE, DYNAMIC].flatMap((re) => [...code.matchAll(re)].map((m) => strings[Number(m[1])]!));
}

const SOURCE = /\.(ts|mts|mjs|js)$/;

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return filesUnder(path);
    return SOURCE.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The file a relative specifier names (`.js` written for a `.ts` file too), if it exists. */
function resolveSpecifier(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = resolve(dirname(from), spec);
  const candidates = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((p) => existsSync(p) && statSync(p).isFile());
}

/** Every source file under `root` and the files of the tree each imports (paths relative to `cwd`). */
export function importGraph(root: string, cwd = process.cwd()): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const inTree = (p: string) => !relative(root, p).startsWith('..');
  for (const file of filesUnder(root)) {
    const targets = importsOf(readFileSync(file, 'utf8'))
      .map((spec) => resolveSpecifier(file, spec))
      .filter((p): p is string => p !== undefined && inTree(p))
      .map((p) => relative(cwd, p));
    graph.set(relative(cwd, file), [...new Set(targets)]);
  }
  return graph;
}

/**
 * One circle per strongly connected group of files (Tarjan), each as the path that goes round it:
 * `[a, b, c, a]`. A file importing itself is a circle of one.
 */
export function findCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || (graph.get(v) ?? []).includes(v)) groups.push(group);
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return groups.map((group) => roundTrip(graph, new Set(group)));
}

/** The shortest way from the group's first file (by name) back to itself, inside the group. */
function roundTrip(graph: ReadonlyMap<string, readonly string[]>, group: Set<string>): string[] {
  const start = [...group].sort()[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!group.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let at = v; at !== start; at = cameFrom.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!cameFrom.has(w)) {
        cameFrom.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}
