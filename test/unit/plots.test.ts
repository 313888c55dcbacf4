// docs/performance.md's plots are drawn from the benchmark results by scripts/plots.ts: a result
// run again, or a change of the script, leaves the checked-in SVGs stale until `npm run plots`.
import { describe, expect, it } from 'vitest';
import { barChart, fmt, lineChart, plots, stalePlots, ticks } from '../../scripts/plots.ts';

describe('plots', () => {
  it('docs/img has the SVGs `npm run plots` draws from test/bench/results (run it after a benchmark)', () => {
    expect(stalePlots()).toEqual([]);
  });

  it('draws the same bytes twice, and an SVG document for each plot', () => {
    const a = plots();
    const b = plots();
    expect([...a.keys()]).toEqual(['convergence.svg', 'memory.svg', 'api-requests.svg', 'fairness.svg']);
    for (const [name, svg] of a) {
      expect(svg, name).toBe(b.get(name));
      expect(svg, name).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>\n/);
      expect(svg.trimEnd().endsWith('</svg>'), name).toBe(true);
      expect(svg, name).not.toMatch(/NaN|undefined|Infinity/);
    }
  });

  it('names a file whose SVG differs, and a missing one', () => {
    expect(stalePlots('/nonexistent')).toEqual(
      ['convergence.svg', 'memory.svg', 'api-requests.svg', 'fairness.svg'].map((f) =>
        expect.stringContaining(f),
      ),
    );
  });

  it('axes start at 0 and reach past the largest value in round steps', () => {
    expect(ticks(54.1)).toEqual([0, 20, 40, 60]);
    expect(ticks(10_000)).toEqual([0, 2000, 4000, 6000, 8000, 10_000]);
    expect(ticks(1.66)).toEqual([0, 0.5, 1, 1.5, 2]);
    expect(ticks(0)).toEqual([0, 1]);
    expect(fmt(10_000)).toBe('10,000');
    expect(fmt(0.017, 3)).toBe('0.017');
    expect(fmt(1.5)).toBe('1.5');
  });

  it('escapes text and draws one polyline per series, one bar per value', () => {
    const line = lineChart({
      title: 'a < b & c',
      x: 'n',
      y: 's',
      series: [
        {
          name: 'one',
          points: [
            [1, 2],
            [3, 4],
          ],
        },
        { name: 'two', points: [[1, 1]], dashed: true },
      ],
    });
    expect(line).toContain('a &lt; b &amp; c');
    expect(line.match(/<polyline /g)).toHaveLength(2);
    const bars = barChart({
      title: 't',
      unit: 'u',
      bars: [
        { label: 'x', value: 1 },
        { label: 'y', value: 2 },
      ],
    });
    expect(bars.match(/<rect x=/g)).toHaveLength(2);
  });
});
