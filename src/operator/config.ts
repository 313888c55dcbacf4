// Operator configuration: every setting is a flag and an environment variable, declared once in
// settings/table.ts. Here the flags are made from that table, and the values read and checked
// together where one setting depends on another.
import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { z } from 'zod';
import { ConfigError } from './runtime/manager/config-error.ts';
import { parseListen } from './runtime/manager/listen-address.ts';
import {
  attributeOf,
  defaultOf,
  helpOf,
  type Raw,
  SETTINGS,
  type Setting,
  type SettingName,
  type SettingValues,
} from './settings/table.ts';
import { checkApiKey } from './settings/values.ts';

export { boundedDuration, boundedNumber, parseBool, parseDuration } from './settings/values.ts';
export { ConfigError, parseListen };

export type OperatorConfig = Omit<SettingValues, 'apiKeyFile' | 'logFormat' | 'leaderElectionId'> & {
  /** From --api-key, or else the content of --api-key-file. */
  apiKey?: string;
  /** text: one readable line per entry (a terminal); json: one JSON object per line (log pipelines). */
  logFormat: 'json' | 'text';
  leaderElectionId: string;
};

const ENTRIES = Object.entries(SETTINGS) as [SettingName, Setting<unknown>][];
const noTicks = (s: string) => s.replaceAll('`', '');

export function addOperatorOptions(cmd: Command): Command {
  for (const [, s] of ENTRIES) {
    const fixed = defaultOf(s);
    const text = s.defaultText ?? (fixed === '' ? undefined : fixed);
    const option = new Option(
      `${s.flag}${s.kind.arg ? ` ${s.kind.arg}` : ''}`,
      noTicks(fixed === undefined && text ? `${helpOf(s)} (default: ${text})` : helpOf(s)),
    );
    if (s.env) option.env(s.env);
    if (fixed !== undefined) option.default(fixed, text === undefined ? 'none' : noTicks(text));
    cmd.addOption(option);
  }
  return cmd;
}

/** Every setting's schema under the name commander gives its value; unset takes the default. */
const SCHEMA = z.object(
  Object.fromEntries(
    ENTRIES.map(([, s]) => [
      attributeOf(s.flag),
      z.preprocess((v) => (v === undefined ? defaultOf(s) : v), s.kind.schema(s.flag)),
    ]),
  ),
);
const FLAG_OF = new Map(ENTRIES.map(([, s]) => [attributeOf(s.flag), s.flag]));

/** Each setting checked by its own rule; the first refusal is the one line the CLI prints. */
function readEach(raw: Record<string, Raw>): SettingValues {
  const r = SCHEMA.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    // our rules write the whole line; a value of another type (from code, not the CLI) gets the flag
    const flag = FLAG_OF.get(String(issue.path[0])) ?? 'settings';
    throw new ConfigError(issue.code === 'custom' ? issue.message : `${flag}: ${issue.message}`);
  }
  const byAttribute = r.data as Record<string, unknown>;
  return Object.fromEntries(
    ENTRIES.map(([name, s]) => [name, byAttribute[attributeOf(s.flag)]]),
  ) as SettingValues;
}

/**
 * The key from --api-key (EDGE_API_KEY), else the file, refused without ever printing it (the
 * operator's and every other command's).
 */
export function apiKeyOf(v: Pick<SettingValues, 'apiKey' | 'apiKeyFile'>): string | undefined {
  if (v.apiKey) return checkApiKey(v.apiKey, '--api-key (EDGE_API_KEY)');
  if (!v.apiKeyFile) return undefined;
  const file = v.apiKeyFile;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `--api-key-file: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  // one trailing newline is how files end (echo, editors, --from-file); anything else is the key
  text = text.replace(/\r?\n$/, '');
  if (!text) throw new ConfigError(`--api-key-file: ${file} is empty`);
  return checkApiKey(text, `--api-key-file: the key in ${file}`);
}

/** Reads and checks every setting; a bad one throws a ConfigError naming the flag. */
export function readConfig(raw: Record<string, Raw>): OperatorConfig {
  const v = readEach(raw);
  const apiKey = apiKeyOf(v);
  if (v.emulator && v.apiUrl)
    throw new ConfigError(
      '--emulator and --api-url exclude each other: pick the embedded emulator or an API',
    );
  const { apiKeyFile: _file, ...rest } = v;
  return {
    ...rest,
    apiKey,
    leaderElectionId: v.leaderElectionId || (v.instance ? `edge-operator-${v.instance}` : 'edge-operator'),
    logFormat: v.logFormat === 'auto' ? (process.stdout.isTTY ? 'text' : 'json') : v.logFormat,
  };
}
