// edgectl as a tool at the terminal: its version in one place (--version, `edgectl version`, the
// operator's build-info metric), how a Deployment's version is read, --context and
// --kubeconfig on the commands that talk to a cluster, completion scripts derived from the
// command tree (run in bash, and in zsh and fish where they are installed), and the Node check
// that comes before anything an older Node cannot load.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeOperator, imageTag } from '../../src/cli/commands/version.ts';
import { completionScript, SHELLS } from '../../src/cli/completion.ts';
import { EXIT } from '../../src/cli/io.ts';
import { NODE_REQUIRED, nodeTooOld } from '../../src/cli/node-check.ts';
import { buildProgram, runCli } from '../../src/cli/run-cli.ts';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { loadKubeConfig } from '../../src/operator/runtime/kube/kube.ts';
import { createMetrics } from '../../src/operator/runtime/metrics.ts';
import { VERSION } from '../../src/version.ts';
import { capturedIO } from '../support/cli-io.ts';
import { scratchDir } from '../support/scratch.ts';

const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
};

async function edgectl(...args: string[]) {
  const io = capturedIO();
  const code = await runCli(args, io);
  return { code, out: io.outText(), err: io.errText() };
}

const deployment = (namespace: string, name: string, image: string, labels: Record<string, string> = {}) => ({
  metadata: { namespace, name, labels: { 'app.kubernetes.io/name': 'edge-operator', ...labels } },
  spec: { template: { spec: { containers: [{ name: 'operator', image, args: ['operator'] }] } } },
  status: { replicas: 2, readyReplicas: 1 },
});

/** Two clusters, one context each: "prod" (current) and "staging", with a token each. */
function kubeconfig(prod: string, staging: string): string {
  const file = join(scratchDir('edgectl-'), 'config');
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters:
  - {name: prod, cluster: {server: "${prod}", insecure-skip-tls-verify: true}}
  - {name: staging, cluster: {server: "${staging}", insecure-skip-tls-verify: true}}
contexts:
  - {name: prod, context: {cluster: prod, user: prod}}
  - {name: staging, context: {cluster: staging, user: staging}}
users:
  - {name: prod, user: {token: prod-token}}
  - {name: staging, user: {token: staging-token}}
current-context: prod
`,
  );
  return file;
}

describe('the version, in one place', () => {
  it('--version prints the package version alone', async () => {
    expect(VERSION).toBe(pkg.version);
    const r = await edgectl('--version');
    expect(r).toEqual({ code: EXIT.ok, out: `${pkg.version}\n`, err: '' });
  });

  it("version --client prints edgectl's version and Node's, and asks no cluster", async () => {
    const r = await edgectl('version', '--client', '--kubeconfig', '/nonexistent/kubeconfig');
    expect(r).toEqual({
      code: EXIT.ok,
      out: `client: ${pkg.version} (node ${process.versions.node})\n`,
      err: '',
    });
  });

  it('the operator exports edge_operator_build_info{version,node} 1', async () => {
    const text = await createMetrics().registry.getSingleMetricAsString('edge_operator_build_info');
    expect(text).toContain(
      `edge_operator_build_info{version="${pkg.version}",node="${process.versions.node}"} 1`,
    );
  });
});

// the version read from a real API server's Deployment: test/e2e/version.test.ts
describe("edgectl version: the operator's version from its Deployment", () => {
  it('the version of a Deployment: a version tag first, else the label, else the tag', () => {
    expect(imageTag('ghcr.io/edge-operator/edge-operator:0.2.0')).toBe('0.2.0');
    expect(imageTag('localhost:5000/edge-operator')).toBeUndefined();
    expect(imageTag('localhost:5000/edge-operator:v1.2.3@sha256:ff')).toBe('v1.2.3');
    expect(imageTag('edge-operator@sha256:ff')).toBeUndefined();
    const d = (image: string, version?: string) =>
      describeOperator(
        deployment('ns', 'eo', image, version ? { 'app.kubernetes.io/version': version } : {}) as never,
      );
    expect(d('edge-operator:latest', '0.1.0')).toMatch(/^operator: 0\.1\.0 /);
    expect(d('edge-operator:dev')).toMatch(/^operator: dev /);
    expect(d('edge-operator')).toMatch(/^operator: unknown /);
  });
});

describe('--context and --kubeconfig on every command that talks to a cluster', () => {
  const config = kubeconfig('http://127.0.0.1:1', 'http://127.0.0.1:1');

  it('drain, trace and version take both', () => {
    const program = buildProgram(capturedIO());
    for (const name of ['drain', 'trace', 'version']) {
      const flags = program.commands.find((c) => c.name() === name)!.options.map((o) => o.long);
      expect(flags, name).toEqual(expect.arrayContaining(['--kubeconfig', '--context']));
    }
  });

  it.each([['drain', '--policy', 'Retain'], ['trace', 'HTTPSEdge/app'], ['version']])(
    'an unknown context is one line naming it and the contexts there are, exit 2 (%s)',
    async (...args) => {
      const r = await edgectl(...args, '--kubeconfig', config, '--context', 'prdo');
      expect(r.code).toBe(EXIT.usage);
      expect(r.out).toBe(
        args[0] === 'version' ? `client: ${pkg.version} (node ${process.versions.node})\n` : '',
      );
      expect(r.err).toBe(
        `error: --context: kubeconfig ${config} has no context "prdo" (its contexts: prod, staging)\n`,
      );
    },
  );

  it('an empty --context is a usage error, not the current context', async () => {
    const r = await edgectl('drain', '--policy', 'Retain', '--kubeconfig', config, '--context', '');
    expect(r).toMatchObject({
      code: EXIT.usage,
      err: 'error: --context: a context name is required, not an empty string\n',
    });
  });

  it('the context named replaces the current one, its cluster and its user', async () => {
    const file = kubeconfig('https://prod.example:6443', 'https://staging.example:6443');
    const current = await loadKubeConfig(file);
    expect([current.context, current.server]).toEqual(['prod', 'https://prod.example:6443']);
    const named = await loadKubeConfig(file, 'staging');
    expect([named.context, named.server]).toEqual(['staging', 'https://staging.example:6443']);
    expect((await named.auth()).headers).toEqual({ authorization: 'Bearer staging-token' });
  });
});

describe('edgectl completion', () => {
  const program = buildProgram(capturedIO());
  const top = program.commands.map((c) => c.name());

  it.each(SHELLS)('the %s script names each top-level command', async (shell) => {
    const r = await edgectl('completion', shell);
    expect(r.code).toBe(EXIT.ok);
    expect(r.err).toBe('');
    expect(r.out).toBe(completionScript(shell, program));
    for (const c of [...top, 'completion', 'version']) expect(r.out, c).toMatch(new RegExp(`\\b${c}\\b`));
  });

  it('an unknown shell is one line on stderr and a usage error', async () => {
    const r = await edgectl('completion', 'tcsh');
    expect(r.code).toBe(EXIT.usage);
    expect(r.out).toBe('');
    expect(r.err.trimEnd().split('\n')).toEqual([
      "error: command-argument value 'tcsh' is invalid for argument 'shell'. Allowed choices are bash, zsh, fish.",
    ]);
  });

  /** What bash completes after the words typed (the last one being completed). */
  function bashCompletes(script: string, ...words: string[]): string[] {
    const file = join(scratchDir('completion-'), 'edgectl.bash');
    writeFileSync(file, script);
    const out = execFileSync(
      'bash',
      [
        '--norc',
        '-c',
        `source ${file}; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _edgectl; printf '%s\\n' "\${COMPREPLY[@]}"`,
        'bash',
        ...words,
      ],
      { encoding: 'utf8' },
    );
    return out.split('\n').filter(Boolean);
  }

  it("in bash: commands, then subcommands, flags once a dash is typed, a flag's choices, files for a path", () => {
    const script = completionScript('bash', program);
    expect(bashCompletes(script, 'edgectl', '')).toEqual([...top, 'help']);
    expect(bashCompletes(script, 'edgectl', 'se')).toEqual(['sessions']);
    expect(bashCompletes(script, 'edgectl', 'sessions', '')).toEqual(
      expect.arrayContaining(['list', 'get', 'upgrade']),
    );
    expect(bashCompletes(script, 'edgectl', 'drain', '--con')).toEqual(['--context']);
    expect(bashCompletes(script, 'edgectl', 'trace', '-o', '')).toEqual(['tree', 'json']);
    expect(bashCompletes(script, 'edgectl', 'completion', '')).toEqual(['bash', 'zsh', 'fish']);
    expect(bashCompletes(script, 'edgectl', 'help', 'dr')).toEqual(['drain']);
    expect(bashCompletes(script, 'edgectl', 'drain', '--kubeconfig', join(REPO_ROOT, 'package.js'))).toEqual([
      join(REPO_ROOT, 'package.json'),
    ]);
    // a value that is no command does not move the command path
    expect(bashCompletes(script, 'edgectl', 'trace', '-n', 'sessions', '--con')).toEqual(['--context']);
  });

  const has = (shell: string) => spawnSync(shell, ['-c', 'exit 0']).status === 0;
  it.skipIf(!has('zsh'))('zsh reads its script without a syntax error (zsh -n)', () => {
    const file = join(scratchDir('completion-'), '_edgectl');
    writeFileSync(file, completionScript('zsh', program));
    expect(spawnSync('zsh', ['-n', file], { encoding: 'utf8' }).stderr).toBe('');
  });
  it.skipIf(!has('fish'))('in fish: what `complete -C` offers', () => {
    const file = join(scratchDir('completion-'), 'edgectl.fish');
    writeFileSync(file, completionScript('fish', program));
    const complete = (line: string) =>
      execFileSync('fish', ['--no-config', '-c', `source ${file}; complete -C '${line}'`], {
        encoding: 'utf8',
      })
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]);
    expect(complete('edgectl ')).toEqual(expect.arrayContaining([...top, 'help']));
    expect(complete('edgectl sessions l')).toEqual(['list']);
    expect(complete('edgectl trace -o ')).toEqual(['json', 'tree']);
    expect(complete('edgectl drain --con')).toEqual(['--context']);
  });
});

describe('the Node edgectl needs', () => {
  it("is package.json's engines", () => {
    expect(pkg.engines.node).toBe(`>=${NODE_REQUIRED}`);
    // the npm scripts' own check (plain JavaScript, for any Node) says the same
    expect(readFileSync(join(REPO_ROOT, 'src/cli/node-version.mjs'), 'utf8')).toContain(
      `Node ${NODE_REQUIRED}`,
    );
  });

  it('an older Node gets one line naming the Node needed and its own version', () => {
    for (const v of ['24.0.0', '22.19.0', '22.20.1', '23.0.0']) expect(nodeTooOld(v), v).toBeUndefined();
    for (const v of ['20.20.2', '22.18.0', '18.0.0', '8.0.0']) {
      const line = nodeTooOld(v);
      expect(line, v).toBe(
        `edgectl needs Node ${NODE_REQUIRED} or newer (Node 24 LTS recommended); this is Node ${v}`,
      );
    }
  });

  it('the entry checks before it loads a command', () => {
    const entry = readFileSync(join(REPO_ROOT, 'src/cli/edgectl.ts'), 'utf8');
    // its static imports: the check and the terminal's IO, neither of which imports anything
    expect([...entry.matchAll(/^import .* from '(.*)';$/gm)].map((m) => m[1])).toEqual([
      './io.ts',
      './node-check.ts',
    ]);
    for (const f of ['io.ts', 'node-check.ts'])
      expect(readFileSync(join(REPO_ROOT, 'src/cli', f), 'utf8'), f).not.toMatch(/^import /m);
    expect(entry.indexOf('nodeTooOld(')).toBeLessThan(entry.indexOf('await import('));
  });
});
