// Tables like kubectl's (no borders, no colour), or JSON/YAML for scripts.
import Table from 'cli-table3';
import { stringify } from 'yaml';
import { CliError, EXIT, printable } from './io.ts';

export type Format = 'table' | 'wide' | 'json' | 'yaml';
export const FORMATS: Format[] = ['table', 'wide', 'json', 'yaml'];

export function parseFormat(s: string): Format {
  if (!(FORMATS as string[]).includes(s))
    throw new CliError(`-o ${s}: use one of ${FORMATS.join(', ')}`, EXIT.usage);
  return s as Format;
}

export function age(iso: string | undefined, now: number): string {
  const at = iso ? Date.parse(iso) : Number.NaN;
  if (Number.isNaN(at)) return '';
  const s = Math.max(0, Math.floor((now - at) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

export interface Column<T> {
  name: string;
  value(x: T): string;
  wide?: boolean;
}

export function render<T>(items: T[], columns: Column<T>[], format: Format, key: string): string {
  if (format === 'json') return `${JSON.stringify({ [key]: items }, null, 2)}\n`;
  if (format === 'yaml') return stringify({ [key]: items });
  const cols = columns.filter((c) => format === 'wide' || !c.wide);
  const table = new Table({
    head: cols.map((c) => c.name),
    chars: {
      top: '',
      'top-mid': '',
      'top-left': '',
      'top-right': '',
      bottom: '',
      'bottom-mid': '',
      'bottom-left': '',
      'bottom-right': '',
      left: '',
      'left-mid': '',
      mid: '',
      'mid-mid': '',
      right: '',
      'right-mid': '',
      middle: '   ',
    },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
  });
  for (const x of items) table.push(cols.map((c) => printable(c.value(x))));
  return items.length
    ? `${table
        .toString()
        .split('\n')
        .map((l) => l.trimEnd())
        .join('\n')}\n`
    : 'No resources found.\n';
}
