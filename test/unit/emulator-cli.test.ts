// edgectl emulator refuses a bad file or --faults with one line naming the flag, the file and
// where in it, and exit 2, before it listens: not a dump of the schema's issues.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { EXIT } from '../../src/cli/io.ts';
import { runCli } from '../../src/cli/run-cli.ts';
import { capturedIO } from '../support/cli-io.ts';

async function emulator(args: string[]): Promise<{ code: number; err: string }> {
  const io = capturedIO();
  return { code: await runCli(['emulator', '--port', '0', ...args], io), err: io.errText() };
}

const file = (name: string, text: string) => {
  const p = join(tmpdir(), `emulator-cli-${process.pid}-${name}`);
  writeFileSync(p, text);
  return p;
};

it.each<[string, () => string[], RegExp]>([
  [
    'a key file whose key is a number',
    () => ['--keys-file', file('keys.yaml', 'keys: [{key: 1}]\n')],
    /^--keys-file \S+keys\.yaml: keys\.0\.key: /,
  ],
  [
    'an agents file missing a name',
    () => ['--agents', file('agents.yaml', 'agents: [{bogus: 1}]\n')],
    /^--agents \S+agents\.yaml: agents\.0\.name: /,
  ],
  [
    'an agents file that is not YAML',
    () => ['--agents', file('broken.yaml', 'agents: [\n')],
    /^--agents \S+broken\.yaml: not YAML or JSON: /,
  ],
  [
    'an agents file that is not there',
    () => ['--agents', '/nonexistent/agents.yaml'],
    /^--agents \/nonexistent\/agents\.yaml: no such file$/,
  ],
  ['a fault rate above 1', () => ['--faults', '{"errorRate":5}'], /^--faults: errorRate: /],
  ['--faults that is not JSON', () => ['--faults', '{bad'], /^--faults: not JSON: /],
  ['an empty key', () => ['--api-key', ':owner'], /^--api-key: ":owner" has an empty key$/],
])('%s: one line naming the flag, exit 2', async (_, args, message) => {
  const r = await emulator(args());
  expect(r.code).toBe(EXIT.usage);
  expect(r.err.split('\n').filter(Boolean)).toHaveLength(1);
  expect(r.err.replace(/^error: /, '').trim()).toMatch(message);
});
