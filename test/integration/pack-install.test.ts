// edgectl installed as a user installs it: `npm pack` (its prepack builds dist/), then
// `npm install -g` of the tarball into a directory of its own, then the installed `edgectl`
// run. The package is packed from a copy of what it is built from (package.json, the sources,
// the CRDs, scripts/), so the build never rewrites this checkout's dist/. On an older Node (the
// machine's /usr/bin/node, Node 20 on Debian) the installed edgectl is one line and exit 1, and
// the postinstall does nothing: no download, no link.
// Skipped, saying why, where npm is not there; with CI=true it runs whatever is missing.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { delimiter, dirname, join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { NODE_REQUIRED, nodeTooOld } from '../../src/cli/node-check.ts';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { importsOf } from '../support/imports.ts';
import { scratchDir } from '../support/scratch.ts';

const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
};
const CI = process.env.CI === 'true';
const npmThere = spawnSync('npm', ['--version'], { encoding: 'utf8' }).status === 0;
const SKIP = !npmThere && !CI ? 'skipped: no npm on PATH (CI=true runs it anyway)' : undefined;
if (SKIP) console.warn(`pack-install: ${SKIP}`);

/** An older Node than edgectl needs, when the machine has one. */
const OLD_NODE = [process.env.EDGE_OLD_NODE, '/usr/bin/node'].find((p): p is string => {
  if (!p || !existsSync(p)) return false;
  const v = spawnSync(p, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout?.trim();
  return !!v && !!nodeTooOld(v);
});
const oldVersion =
  OLD_NODE && execFileSync(OLD_NODE, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();

// npm's own variables of the `npm test` this may run under are not the install's
const env = (over: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const e: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^npm_(lifecycle_|package_|config_(global|prefix|location|dry_run|ignore_scripts)$)/i.test(k))
      e[k] = v;
  // this test's Node first: npm and edgectl's `#!/usr/bin/env node` run on it
  return { ...e, PATH: [dirname(process.execPath), process.env.PATH].join(delimiter), ...over };
};
const run = (cmd: string, args: string[], o: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8', cwd: o.cwd, env: o.env ?? env(), timeout: 120_000 });
  return { code: r.status, out: r.stdout ?? '', err: r.stderr ?? '' };
};

describe.skipIf(!!SKIP)(`edgectl from \`npm pack\` and \`npm install -g\`${SKIP ? ` (${SKIP})` : ''}`, () => {
  const tmp = scratchDir('pack-');
  const stage = join(tmp, 'stage');
  const prefix = join(tmp, 'global');
  const cache = join(tmp, 'edge-cache');
  const installed = join(prefix, 'lib', 'node_modules', pkg.name);
  const edgectl = join(prefix, 'bin', 'edgectl');
  let packed: string[] = [];

  beforeAll(() => {
    // what the package is built from, and the checkout's node_modules for the build's tsc
    mkdirSync(stage);
    for (const f of [
      'package.json',
      'README.md',
      'LICENSE',
      'tsconfig.json',
      'tsconfig.build.json',
      'src',
      'crds',
      'scripts',
    ])
      cpSync(join(REPO_ROOT, f), join(stage, f), { recursive: true });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(stage, 'node_modules'));

    const pack = run('npm', ['pack', '--pack-destination', tmp, '--json', '--loglevel=error'], {
      cwd: stage,
    });
    expect(pack.err.includes('error TS'), pack.err).toBe(false);
    expect(pack.code, pack.err).toBe(0);
    packed = (JSON.parse(pack.out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
    expect(tgz).toBe(`${pkg.name}-${pkg.version}.tgz`);

    // dependencies from npm's cache where it has them, else the registry
    const install = run(
      'npm',
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        join(tmp, tgz!),
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        '--loglevel=error',
      ],
      { env: env({ EDGE_OPERATOR_CACHE: cache }) },
    );
    expect(install.code, install.err).toBe(0);
  }, 150_000);

  it('packs dist/, the CRDs and the postinstall script: no sources, no tests, no other script', () => {
    expect(packed).toEqual(
      expect.arrayContaining(['dist/cli/edgectl.js', 'dist/version.js', 'scripts/ensure-node.mjs']),
    );
    expect(packed.filter((f) => f.startsWith('crds/')).length).toBeGreaterThan(0);
    const other = packed.filter(
      (f) =>
        !/^(dist|crds)\//.test(f) &&
        !['package.json', 'README.md', 'LICENSE', 'scripts/ensure-node.mjs'].includes(f),
    );
    expect(other).toEqual([]);
  });

  it('dist/ imports only dependencies and Node, never a source file', () => {
    const files: string[] = [];
    const walk = (d: string) => {
      for (const f of readdirSync(d)) {
        const p = join(d, f);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.js')) files.push(p);
      }
    };
    walk(join(installed, 'dist'));
    const bad: string[] = [];
    for (const file of files) {
      for (const spec of importsOf(readFileSync(file, 'utf8'))) {
        const where = `${relative(installed, file)}: ${spec}`;
        if (spec.startsWith('.')) {
          if (!spec.endsWith('.js') && !spec.endsWith('.json')) bad.push(where);
          continue;
        }
        if (spec.startsWith('node:')) continue;
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
        // the local control plane's container path only (`edgectl cluster`, a checkout's tool)
        if (name === 'testcontainers') continue;
        if (!(name in pkg.dependencies)) bad.push(where);
      }
    }
    expect(files.length).toBeGreaterThan(50);
    expect(bad).toEqual([]);
  });

  it('the installed edgectl answers --version, version --client, --help and completion', () => {
    expect(readFileSync(join(installed, 'dist/cli/edgectl.js'), 'utf8').split('\n')[0]).toBe(
      '#!/usr/bin/env node',
    );
    expect(run(edgectl, ['--version'])).toEqual({ code: 0, out: `${pkg.version}\n`, err: '' });
    expect(run(edgectl, ['version', '--client'])).toEqual({
      code: 0,
      out: `client: ${pkg.version} (node ${process.versions.node})\n`,
      err: '',
    });
    const help = run(edgectl, ['--help']);
    expect(help.code).toBe(0);
    for (const c of [
      'sessions',
      'tunnels',
      'export',
      'drain',
      'trace',
      'operator',
      'emulator',
      'version',
      'completion',
    ])
      expect(help.out, c).toMatch(new RegExp(`^  ${c}\\b`, 'm'));
    const bash = run(edgectl, ['completion', 'bash']);
    expect(bash.code).toBe(0);
    expect(bash.out).toContain('complete -F _edgectl edgectl');
  });

  it.skipIf(!OLD_NODE)(
    `on an older Node (${OLD_NODE ?? 'none on this machine'}): one line naming Node ${NODE_REQUIRED}, exit 1, and a postinstall that does nothing`,
    () => {
      const line = `edgectl needs Node ${NODE_REQUIRED} or newer (Node 24 LTS recommended); this is Node ${oldVersion}\n`;
      const old = env({ PATH: [dirname(OLD_NODE!), process.env.PATH].join(delimiter) });
      // the bin as installed (its `#!/usr/bin/env node` finds the old Node first) and dist's entry run directly
      expect(run(edgectl, ['--help'], { env: old })).toEqual({ code: 1, out: '', err: line });
      expect(run(OLD_NODE!, [join(installed, 'dist/cli/edgectl.js'), 'version'])).toEqual({
        code: 1,
        out: '',
        err: line,
      });
      // the postinstall as npm would run it on that Node: not a checkout, so nothing fetched or linked
      const post = run(OLD_NODE!, ['scripts/ensure-node.mjs'], {
        cwd: installed,
        env: env({ EDGE_OPERATOR_CACHE: cache }),
      });
      expect(post).toEqual({ code: 0, out: '', err: '' });
      expect(existsSync(cache)).toBe(false);
      expect(existsSync(join(installed, 'node_modules', '.bin', 'node'))).toBe(false);
    },
  );
});
