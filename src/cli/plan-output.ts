// `edgectl plan`'s output: a text plan for people (a line per object, then what it would send or
// change, then a summary), or a stable JSON document for CI. Pure.
import { type PlanEntry, planDocument, summaryOf } from '../operator/preview-entry.ts';
import { printable } from './io.ts';

const MARK: Record<PlanEntry['action'], string> = {
  create: '+',
  update: '~',
  adopt: '~',
  delete: '-',
  nothing: '=',
  refuse: '!',
  wait: '!',
  error: '!',
};

/** A value on one line: JSON (a string quoted, an object compact). */
const show = (v: unknown): string => (v === undefined ? 'none' : JSON.stringify(v));

const why = (e: PlanEntry) =>
  [e.reason, e.message].filter((x) => x !== undefined && x !== '').join(': ') || undefined;

/** What the object's first line says after its name. */
function headline(e: PlanEntry): string {
  const at = e.id ? ` ${e.id}` : '';
  const said = why(e);
  switch (e.action) {
    case 'create':
      return `create${e.message ? ` (${e.message})` : ''}`;
    case 'update':
    case 'adopt':
      return `${e.action}${at}`;
    case 'delete':
      return `delete${at}${e.message ? ` (${e.message})` : ''}`;
    case 'nothing':
      return `no changes${at}${said ? ` (${said})` : ''}`;
    case 'refuse':
      return `refused: ${said ?? ''}`;
    case 'wait':
      return `would wait: ${said ?? ''}`;
    case 'error':
      return `cannot tell: ${said ?? ''}`;
  }
}

/** The lines under an object: a create's body (field: value), the changes (field: was -> will be), notes. */
function details(e: PlanEntry): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(e.body ?? {})) out.push(`${k}: ${show(v)}`);
  for (const c of e.changes ?? []) out.push(`${c.field}: ${show(c.was)} -> ${show(c.will)}`);
  if (e.action === 'adopt' && !e.changes?.length) out.push('(equal to the spec: no API write)');
  for (const n of e.notes ?? []) out.push(`note: ${n}`);
  return out;
}

/** The text plan; control characters from the files or the API are shown escaped. */
export function renderPlan(entries: readonly PlanEntry[]): string {
  const lines: string[] = [];
  for (const e of entries) {
    lines.push(`${MARK[e.action]} ${e.kind} ${e.namespace}/${e.name}: ${headline(e)}`);
    for (const d of details(e)) lines.push(`    ${d}`);
  }
  if (lines.length) lines.push('');
  lines.push(summaryLine(entries));
  return `${lines.map(printable).join('\n')}\n`;
}

/** "Plan: 1 to create, 1 to update, ...": every count, in the same order each time. */
export function summaryLine(entries: readonly PlanEntry[]): string {
  const s = summaryOf(entries);
  return (
    `Plan: ${s.create} to create, ${s.update} to update, ${s.adopt} to adopt, ${s.delete} to delete, ` +
    `${s.nothing} unchanged; ${s.refuse} refused, ${s.wait} waiting, ${s.error} unknown.`
  );
}

/** The JSON document (`-o json`), with the notes that concern every object. */
export const renderPlanJson = (entries: readonly PlanEntry[], notes: readonly string[] = []): string =>
  `${JSON.stringify({ ...planDocument(entries), notes }, null, 2)}\n`;
