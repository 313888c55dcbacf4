// The plots of docs/performance.md, as SVG files in docs/img/, drawn from the benchmark results in
// test/bench/results/ (each benchmark's own file: convergence-<N>.json, lean-<N>.json,
// fairness-<N>.json, budget-<N>.json, deletion-<N>.json). Hand-written SVG, no dependency, the
// same bytes for the same results.
// Usage: node scripts/plots.ts           writes the SVGs (npm run plots)
//        node scripts/plots.ts --check   exits 1 naming each SVG that differs from what it would write
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
export const RESULTS = join(ROOT, 'test/bench/results');
export const IMG = join(ROOT, 'docs/img');

type Json = Record<string, unknown>;

const read = (file: string): Json => JSON.parse(readFileSync(join(RESULTS, file), 'utf8')) as Json;
const num = (o: Json, path: string): number | undefined => {
  const v = path.split('.').reduce<unknown>((n, k) => (n as Json | undefined)?.[k], o);
  return typeof v === 'number' ? v : undefined;
};

/** `<bench>-<N>.json`, the file a benchmark writes for N objects, by N ascending. */
function byN(bench: string): { n: number; result: Json; file: string }[] {
  const pattern = new RegExp(`^${bench}-(\\d+)\\.json$`);
  return readdirSync(RESULTS)
    .flatMap((file) => {
      const m = pattern.exec(file);
      return m ? [{ n: Number(m[1]), result: read(file), file }] : [];
    })
    .sort((a, b) => a.n - b.n);
}

// --- drawing ---------------------------------------------------------------------------------

const W = 640;
const H = 360;
const FONT = 'font-family="sans-serif" font-size="12"';
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A number as the page writes it: thousands apart with a comma, at most `digits` decimals. */
export function fmt(x: number, digits = 2): string {
  const fixed = x.toFixed(digits).replace(/\.?0+$/, '');
  const [int = '', frac] = fixed.split('.');
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return frac ? `${grouped}.${frac}` : grouped;
}

/** Round numbers from 0 to at least `max`: steps of 1, 2 or 5 times a power of ten. */
export function ticks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw) ?? 10 * pow;
  const steps = Math.max(1, Math.ceil(max / step - 1e-9));
  return Array.from({ length: steps + 1 }, (_, i) => Number((i * step).toPrecision(12)));
}

function frame(title: string, body: string[], note?: string): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" ${FONT}>`,
    `<title>${esc(title)}</title>`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`,
    ...body,
    ...(note
      ? [`<text x="${W / 2}" y="${H - 8}" text-anchor="middle" fill="#555555">${esc(note)}</text>`]
      : []),
    '</svg>',
    '',
  ].join('\n');
}

export interface Series {
  name: string;
  points: [number, number][];
  dashed?: boolean;
  /** which points carry their value (default: all) */
  labels?: 'all' | 'last';
}

/** Lines with their points on linear axes from 0, a legend at the top left of the plot area. */
export function lineChart(o: {
  title: string;
  x: string;
  y: string;
  series: Series[];
  note?: string;
}): string {
  const left = 70;
  const right = W - 60;
  const top = 50;
  const bottom = H - 70;
  const xs = ticks(Math.max(...o.series.flatMap((s) => s.points.map((p) => p[0]))));
  const ys = ticks(Math.max(...o.series.flatMap((s) => s.points.map((p) => p[1]))));
  const xMax = xs[xs.length - 1]!;
  const yMax = ys[ys.length - 1]!;
  const px = (x: number) => (left + ((right - left) * x) / xMax).toFixed(1);
  const py = (y: number) => (bottom - ((bottom - top) * y) / yMax).toFixed(1);
  const body: string[] = [];
  for (const y of ys) {
    body.push(`<line x1="${left}" y1="${py(y)}" x2="${right}" y2="${py(y)}" stroke="#e5e5e5"/>`);
    body.push(`<text x="${left - 6}" y="${py(y)}" dy="4" text-anchor="end">${fmt(y)}</text>`);
  }
  for (const x of xs) {
    body.push(`<line x1="${px(x)}" y1="${bottom}" x2="${px(x)}" y2="${bottom + 5}" stroke="#333333"/>`);
    body.push(`<text x="${px(x)}" y="${bottom + 18}" text-anchor="middle">${fmt(x)}</text>`);
  }
  body.push(`<line x1="${left}" y1="${bottom}" x2="${right}" y2="${bottom}" stroke="#333333"/>`);
  body.push(`<line x1="${left}" y1="${top}" x2="${left}" y2="${bottom}" stroke="#333333"/>`);
  body.push(`<text x="${(left + right) / 2}" y="${bottom + 38}" text-anchor="middle">${esc(o.x)}</text>`);
  body.push(
    `<text x="18" y="${(top + bottom) / 2}" text-anchor="middle" transform="rotate(-90 18 ${(top + bottom) / 2})">${esc(o.y)}</text>`,
  );
  const pending: { x: string; y: number; color: string; text: string }[] = [];
  const labelled = new Set<string>();
  o.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : '';
    const pts = s.points.map(([x, y]) => `${px(x)},${py(y)}`).join(' ');
    body.push(`<polyline points="${pts}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`);
    s.points.forEach(([x, y], j) => {
      body.push(`<circle cx="${px(x)}" cy="${py(y)}" r="3.5" fill="${color}"/>`);
      if (s.labels === 'last' && j < s.points.length - 1) return;
      const text = fmt(y, 1);
      const at = `${px(x)},${py(y)},${text}`;
      if (labelled.has(at)) return; // the same point and value, labelled by another series
      labelled.add(at);
      pending.push({ x: px(x), y: Number(py(y)) - 4, color, text });
    });
    const ly = top + 6 + i * 18;
    body.push(
      `<line x1="${left + 12}" y1="${ly}" x2="${left + 36}" y2="${ly}" stroke="${color}" stroke-width="2"${dash}/>`,
    );
    body.push(`<text x="${left + 42}" y="${ly}" dy="4">${esc(s.name)}</text>`);
  });
  // each column's values right of their points, in the points' order, 13 px apart at least
  for (const column of new Set(pending.map((l) => l.x))) {
    const labels = pending.filter((l) => l.x === column).sort((a, b) => a.y - b.y);
    for (let k = 1; k < labels.length; k++) labels[k]!.y = Math.max(labels[k]!.y, labels[k - 1]!.y + 13);
    const over = Math.max(0, labels[labels.length - 1]!.y - (bottom - 2));
    for (const l of labels)
      body.push(
        `<text x="${(Number(column) + 6).toFixed(1)}" y="${(l.y - over).toFixed(1)}" fill="${l.color}">${l.text}</text>`,
      );
  }
  return frame(o.title, body, o.note);
}

export interface Bar {
  label: string;
  value: number;
}

/** Horizontal bars from 0, a label on the left of each and its value at its end. */
export function barChart(o: {
  title: string;
  unit: string;
  bars: Bar[];
  note?: string;
  digits?: number;
}): string {
  const left = 300;
  const right = W - 70;
  const top = 50;
  const bottom = H - 75;
  const xs = ticks(Math.max(...o.bars.map((b) => b.value)));
  const xMax = xs[xs.length - 1]!;
  const px = (x: number) => (left + ((right - left) * x) / xMax).toFixed(1);
  const band = (bottom - top) / o.bars.length;
  const body: string[] = [];
  for (const x of xs) {
    body.push(`<line x1="${px(x)}" y1="${top}" x2="${px(x)}" y2="${bottom}" stroke="#e5e5e5"/>`);
    body.push(`<text x="${px(x)}" y="${bottom + 18}" text-anchor="middle">${fmt(x)}</text>`);
  }
  body.push(`<line x1="${left}" y1="${bottom}" x2="${right}" y2="${bottom}" stroke="#333333"/>`);
  body.push(`<line x1="${left}" y1="${top}" x2="${left}" y2="${bottom}" stroke="#333333"/>`);
  body.push(`<text x="${(left + right) / 2}" y="${bottom + 38}" text-anchor="middle">${esc(o.unit)}</text>`);
  o.bars.forEach((b, i) => {
    const y = top + i * band + band * 0.2;
    const h = band * 0.6;
    const mid = (y + h / 2).toFixed(1);
    body.push(`<text x="${left - 8}" y="${mid}" dy="4" text-anchor="end">${esc(b.label)}</text>`);
    body.push(
      `<rect x="${left}" y="${y.toFixed(1)}" width="${(Number(px(b.value)) - left).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[0]}"/>`,
    );
    body.push(
      `<text x="${Number(px(b.value)) + 6}" y="${mid}" dy="4">${b.value.toFixed(o.digits ?? 2)}</text>`,
    );
  });
  return frame(o.title, body, o.note);
}

// --- the plots -------------------------------------------------------------------------------

function convergencePlot(): string {
  const runs = byN('convergence');
  const series: Series[] = [
    { name: 'operator: all Ready', points: runs.map((r) => [r.n, num(r.result, 'operator_seconds') ?? 0]) },
    {
      name: 'operator CPU until Ready',
      points: runs.map((r) => [r.n, num(r.result, 'operator_cpu_seconds_until_ready') ?? 0]),
    },
  ];
  const loop = runs.flatMap((r): [number, number][] => {
    const s = num(r.result, 'plain_loop_seconds');
    return s === undefined ? [] : [[r.n, s]];
  });
  if (loop.length) series.push({ name: 'plain loop: all Ready', points: loop, dashed: true });
  return lineChart({
    title: 'Convergence: N objects of all kinds applied at once',
    x: 'objects (N)',
    y: 'seconds',
    series,
    note: runs.map((r) => r.file).join(', '),
  });
}

function memoryPlot(): string {
  const runs = byN('lean');
  const newest = [...runs].sort((a, b) => String(a.result.date).localeCompare(String(b.result.date))).pop();
  const start = newest ? (num(newest.result, 'rss_at_start_mib') ?? 0) : 0;
  const bare = newest ? (num(newest.result, 'bare_node_mib') ?? 0) : 0;
  const xMax = runs.length ? runs[runs.length - 1]!.n : 1;
  return lineChart({
    title: 'Operator memory (RSS) against objects managed',
    x: 'objects (N)',
    y: 'MiB',
    series: [
      {
        name: 'converged',
        points: [
          [0, start],
          ...runs.map((r): [number, number] => [r.n, num(r.result, 'rss_converged_mib') ?? 0]),
        ],
      },
      {
        name: 'after a resync',
        points: [
          [0, start],
          ...runs.map((r): [number, number] => [r.n, num(r.result, 'rss_after_resync_mib') ?? 0]),
        ],
      },
      {
        name: 'bare Node, same flags',
        points: [
          [0, bare],
          [xMax, bare],
        ],
        dashed: true,
        labels: 'last',
      },
    ],
    note: `${runs.map((r) => r.file).join(', ')}; N = 0: at start`,
  });
}

function apiPlot(): string {
  const bars: Bar[] = [];
  for (const r of byN('convergence')) {
    const v = num(r.result, 'api_calls_per_object');
    if (v !== undefined) bars.push({ label: `create ${fmt(r.n)}, no limit`, value: v });
  }
  for (const r of byN('budget')) {
    const req = num(r.result, 'converge.api_requests');
    if (req !== undefined) bars.push({ label: `create ${fmt(r.n)}, 120 a minute`, value: req / r.n });
  }
  for (const r of byN('fairness')) {
    const req = num(r.result, 'bulk.api_requests');
    if (req !== undefined)
      bars.push({ label: `create ${fmt(r.n)}, shared by 3 namespaces`, value: req / r.n });
  }
  for (const r of byN('deletion')) {
    const rounds = (r.result.rounds as Json[] | undefined) ?? [];
    for (const round of rounds) {
      const v = num(round, 'delete_api_requests_per_object');
      if (v !== undefined) bars.push({ label: `delete ${fmt(2 * r.n)}, ${String(round.order)}`, value: v });
    }
  }
  for (const r of byN('convergence')) {
    const v = num(r.result, 'idle.api_calls_per_object_per_resync');
    if (v !== undefined) bars.push({ label: `idle ${fmt(r.n)}, per resync`, value: v });
  }
  return barChart({
    title: 'Edge API requests per object',
    unit: 'requests per object',
    bars,
    digits: 3,
    note: 'convergence-, budget-, fairness-, deletion-<N>.json',
  });
}

function fairnessPlot(): string {
  const runs = byN('fairness');
  const r = runs[runs.length - 1];
  const ms = (path: string) => (r ? (num(r.result, path) ?? 0) : 0) / 1000;
  const n = r ? fmt(r.n) : 'N';
  return barChart({
    title: `Fair share at 120 requests a minute, beside a ${n}-object bulk`,
    unit: 'seconds',
    bars: [
      { label: 'another namespace: one object Ready', value: ms('small_namespace_one_object_ready_ms') },
      { label: 'another namespace: an edit at the API', value: ms('other_namespace_edit_to_api_ms') },
      {
        label: 'one object Ready while the bulk deletes',
        value: ms('small_namespace_one_object_ready_during_bulk_delete_ms'),
      },
    ],
    note: r
      ? `${r.file}: the bulk took ${fmt(num(r.result, 'bulk.seconds') ?? 0, 0)} s (${fmt(num(r.result, 'bulk.ratio') ?? 0)} times what the limit allows)`
      : undefined,
  });
}

/** Every plot, by file name under docs/img/. */
export function plots(): Map<string, string> {
  return new Map([
    ['convergence.svg', convergencePlot()],
    ['memory.svg', memoryPlot()],
    ['api-requests.svg', apiPlot()],
    ['fairness.svg', fairnessPlot()],
  ]);
}

/** The plots whose checked-in SVG differs from what `plots()` draws (or is missing), as repository paths. */
export function stalePlots(dir = IMG): string[] {
  return [...plots()].flatMap(([name, svg]) => {
    const file = join(dir, name);
    const same = existsSync(file) && readFileSync(file, 'utf8') === svg;
    return same ? [] : [relative(ROOT, file)];
  });
}

if (import.meta.main) {
  if (process.argv.includes('--check')) {
    const stale = stalePlots();
    for (const f of stale) console.error(`${f} is stale: run npm run plots`);
    process.exitCode = stale.length ? 1 : 0;
  } else {
    mkdirSync(IMG, { recursive: true });
    for (const [name, svg] of plots()) {
      writeFileSync(join(IMG, name), svg);
      console.log(relative(ROOT, join(IMG, name)));
    }
  }
}
