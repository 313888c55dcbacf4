// Every flag the README and docs/ document for an `edgectl` command is one that command takes, asked
// of the real CLI (a process per command, its --help), so a documented flag cannot go
// missing again; and the emulator's --rate-limit, started as a process, answers 429 past it.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';

const run = promisify(execFile);
const EDGECTL = join(REPO_ROOT, 'src/cli/edgectl.ts');
const edgectl = (...args: string[]) =>
  run(process.execPath, [EDGECTL, ...args], { encoding: 'utf8' }).then(
    (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout, err: e.stderr }),
  );

/** A command's long options and subcommands, from its --help. */
async function help(path: string[]): Promise<{ options: Set<string>; commands: string[] }> {
  const { out } = await edgectl(...path, '--help');
  const [opts = '', cmds = ''] = out.split(/^Commands:$/m);
  return {
    options: new Set(
      opts.match(/^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)/gm)?.map((l) => l.trim().replace(/^-\w, /, '')) ?? [],
    ),
    commands: [...cmds.matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!).filter((c) => c !== 'help'),
  };
}

/** Every option of a top-level command and of its subcommands (asked once per command, subcommands at once). */
const asked = new Map<string, Promise<Set<string>>>();
function optionsOf(command: string): Promise<Set<string>> {
  let p = asked.get(command);
  if (!p) {
    p = (async () => {
      const top = await help([command]);
      const subs = await Promise.all(top.commands.map((sub) => help([command, sub])));
      return new Set([...top.options, ...subs.flatMap((s) => [...s.options])]);
    })();
    asked.set(command, p);
  }
  return p;
}

/**
 * The flags the README documents, by command: the operator's flag table; each paragraph that
 * names `edgectl <command>` (its flags belong to the commands it names); each command line
 * (`edgectl ...`, `node src/cli/edgectl.ts ...`, `npm run emulator -- ...`) in a code block.
 */
const COMMANDS = [
  'operator',
  'emulator',
  'sessions',
  'tunnels',
  'export',
  'drain',
  'cluster',
  'trace',
  'version',
  'completion',
];

function documented(readme: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (cmds: string[], text: string) => {
    for (const f of text.match(/(?<![\w-])--[a-z][a-z0-9-]*/g) ?? [])
      for (const c of cmds) out.set(c, (out.get(c) ?? new Set()).add(f));
  };
  const commandsIn = (text: string) => [
    ...new Set(
      [...text.matchAll(/edgectl(?:\.ts)? ([a-z]+(?:\|[a-z]+)*)/g)].flatMap((m) => m[1]!.split('|')),
    ),
  ];
  const fenced = readme.split(/^```.*$/m);
  fenced.forEach((part, i) => {
    if (i % 2 === 1) {
      for (const line of part.split('\n')) {
        const cmds = /npm run emulator/.test(line) ? ['emulator'] : commandsIn(line);
        if (cmds.length) add(cmds, line);
      }
      return;
    }
    // paragraphs, and each item of a list apart
    for (const block of part.split(/\n\s*\n|\n(?=- )/)) {
      if (/^\| `--/m.test(block)) {
        for (const row of block.split('\n').filter((l) => l.startsWith('| `--')))
          add(['operator'], row.split('|')[1]!);
        continue;
      }
      // in prose, a flag belongs to the commands named last before it ("`edgectl a` and
      // `edgectl b` take ..." names both); another program's command line is not ours
      const prose = block.replace(/`(?:helm|kubectl|docker|npm|git|go|kustomize|curl) [^`]*`/g, '');
      let carried: string[] = [];
      for (const p of prose.split(/(?=`edgectl [a-z])/)) {
        const end = p.indexOf('`', 1) + 1;
        const cmds = [...carried, ...commandsIn(p.slice(0, end))].filter((c) => COMMANDS.includes(c));
        carried = /^[\s,and]*$/.test(p.slice(end)) ? cmds : [];
        if (cmds.length) add(cmds, p);
      }
    }
  });
  return out;
}

describe('edgectl: every documented flag exists', () => {
  // the README and every page of docs/ (not docs/img's plots), each read apart (a code fence never spans two)
  const pages = [
    'README.md',
    ...readdirSync(join(REPO_ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const docs = new Map<string, Set<string>>();
  for (const page of pages)
    for (const [c, flags] of documented(readFileSync(join(REPO_ROOT, page), 'utf8')))
      docs.set(c, new Set([...(docs.get(c) ?? []), ...flags]));

  it('the README and docs/ document flags for the operator, the emulator, sessions, drain and export', () => {
    for (const c of ['operator', 'emulator', 'sessions', 'drain', 'export'])
      expect(docs.get(c)?.size ?? 0, c).toBeGreaterThan(0);
    expect(docs.get('emulator')).toContain('--rate-limit');
  });

  for (const command of COMMANDS)
    it(`edgectl ${command} takes every flag the README gives it`, async () => {
      const wanted = [...(docs.get(command) ?? [])];
      // a paragraph naming several commands documents the union of their flags
      const related = command === 'sessions' || command === 'tunnels' ? ['sessions', 'tunnels'] : [command];
      const have = new Set<string>();
      for (const c of related) for (const o of await optionsOf(c)) have.add(o);
      expect(
        wanted.filter((f) => !have.has(f)),
        `flags the README gives edgectl ${command}`,
      ).toEqual([]);
    });
});

describe('edgectl emulator --rate-limit, as a process', () => {
  let proc: ChildProcess | undefined;
  afterAll(() => {
    proc?.kill();
  });

  it('refuses a value that is not a whole number > 0 with one line and exit 2', async () => {
    const bads = ['0', '-5', '1.5', 'many', '1e3', '0x10'];
    const runs = await Promise.all(
      bads.map((bad) => edgectl('emulator', '--port', '0', '--rate-limit', bad)),
    );
    for (const [i, r] of runs.entries()) {
      const bad = bads[i]!;
      expect(r.code, bad).toBe(2);
      expect(r.err.trim().split('\n'), bad).toHaveLength(1);
      expect(r.err, bad).toContain('--rate-limit');
    }
  });

  it('answers 429 with Retry-After and the API error body past the limit', async () => {
    proc = spawn(process.execPath, [EDGECTL, 'emulator', '--port', '0', '--rate-limit', '5'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`emulator did not start: ${out}`)), 15_000);
      proc!.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /emulator listening on (http:\/\/\S+)/.exec(out);
        if (m) {
          clearTimeout(t);
          resolve(m[1]!);
        }
      });
    });
    expect(out).toContain('rate limit: 5 requests a minute per account');
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 6; i++) {
      last = await fetch(`${url}/ip_policies`, {
        headers: { authorization: 'Bearer emulator-key', 'ngrok-version': '2' },
      });
      statuses.push(last.status);
      if (last.status === 429) break;
      await last.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    const body = (await last!.json()) as { status_code: number; msg: string };
    expect(body.status_code).toBe(429);
    expect(body.msg).toBeTruthy();
  });
});
