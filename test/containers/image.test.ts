// The shipped image, run the way a cluster runs it: built from the Dockerfile, as a non-root
// user, read-only root filesystem, no shell, host network; against a control plane that runs as
// containers too (the path `npm start` takes where Docker answers and no binaries are built)
// and the emulator. Every kind from deploy/examples reaches Ready and deletes cleanly. And what
// a scanner sees in it: the SBOM the image build writes (syft) names glibc's Debian packages,
// Node and the bundled npm packages, each with its version.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GenericContainer, type StartedTestContainer, Wait } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/server.ts';
import { type ClusterState, clusterDown, clusterUp, REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply, readManifests } from '../../src/operator/apply.ts';
import { allCrds } from '../../src/operator/kinds/generate-crds.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { decodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { Kube, type KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';
import { freePort, NAMESPACES, ready, res, waitFor } from '../support/operator.ts';

const skipReason = inject('containersSkip');
/** Run by the image's node: its files (not /proc, /sys, /dev, mounts) with their sizes. */
const LIST_FILES = `(function walk(d) {
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = (d === '/' ? '' : d) + '/' + e.name;
    if (['/proc', '/sys', '/dev', '/etc/hosts', '/etc/hostname', '/etc/resolv.conf', '/.dockerenv'].includes(p)) continue;
    if (e.isDirectory()) walk(p);
    else console.log(String(fs.lstatSync(p).size).padStart(10), p);
  }
})('/')`;
const IMAGE = inject('image');
const DIR = join(REPO_ROOT, '.cache', 'containers-cluster');

/** testcontainers has no builder method for a read-only root filesystem. */
class HardenedContainer extends GenericContainer {
  withReadOnlyRootFilesystem(): this {
    this.hostConfig.ReadonlyRootfs = true;
    return this;
  }
}

describe.skipIf(!!skipReason)('the image, against a control plane in containers', () => {
  let cluster: ClusterState;
  let kube: Kube;
  let emu: Emulator;
  let op: StartedTestContainer;
  let port: number;
  let tmp: string;
  const logs: string[] = [];
  const ns = `img-${Date.now().toString(36)}`;
  const exec = (cmd: string[]) => op.exec(cmd);

  beforeAll(async () => {
    const before = process.env.EDGE_CONTROLPLANE;
    process.env.EDGE_CONTROLPLANE = 'container';
    try {
      cluster = await clusterUp({ dir: DIR, log: () => {} });
    } finally {
      if (before === undefined) delete process.env.EDGE_CONTROLPLANE;
      else process.env.EDGE_CONTROLPLANE = before;
    }
    kube = new Kube(kubeconfigTarget(cluster.kubeconfig));
    await apply(kube, allCrds() as KubeObject[]);
    await kube.create(NAMESPACES, undefined, { metadata: { name: ns } });
    emu = await startEmulator();
    // the operator runs as 65532: it reads a copy of the admin kubeconfig, mounted read-only
    tmp = mkdtempSync(join(tmpdir(), 'edge-image-'));
    copyFileSync(cluster.kubeconfig, join(tmp, 'kubeconfig'));
    chmodSync(join(tmp, 'kubeconfig'), 0o644);
    port = await freePort();
    op = await new HardenedContainer(IMAGE)
      .withReadOnlyRootFilesystem()
      .withNetworkMode('host')
      .withBindMounts([
        { source: join(tmp, 'kubeconfig'), target: '/etc/edge-operator/kubeconfig', mode: 'ro' },
      ])
      .withEnvironment({ EDGE_API_KEY: emu.apiKey, LOG_LEVEL: 'debug' })
      .withCommand([
        'operator',
        '--kubeconfig',
        '/etc/edge-operator/kubeconfig',
        '--api-url',
        emu.url,
        '--namespaces',
        ns,
        '--listen',
        `127.0.0.1:${port}`,
        '--leader-election-namespace',
        ns,
        '--cluster-id',
        'containers',
        '--resync-period',
        '10s',
        '--api-rate-limit',
        '100000',
      ])
      .withLogConsumer((s) =>
        s.on('data', (d: Buffer) => logs.push(...d.toString().split('\n').filter(Boolean))),
      )
      .withWaitStrategy(Wait.forLogMessage('starting edge-operator'))
      .withStartupTimeout(60_000)
      .start();
  });

  afterAll(async () => {
    await op?.stop({ timeout: 10_000 });
    await emu?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    await clusterDown({ dir: DIR, log: () => {} });
  });

  it('is at most 130 MB: Node, the libraries it links, CA certificates, the bundle, what scanners read', () => {
    const bytes = Number(
      execFileSync('docker', ['image', 'inspect', '-f', '{{.Size}}', IMAGE], { encoding: 'utf8' }),
    );
    const files = execFileSync(
      'docker',
      ['run', '--rm', '--network', 'none', '--entrypoint', '/usr/local/bin/node', IMAGE, '-e', LIST_FILES],
      { encoding: 'utf8' },
    );
    process.stdout.write(
      `image ${IMAGE}: ${(bytes / 1e6).toFixed(1)} MB (${(bytes / 2 ** 20).toFixed(1)} MiB)\n${files}`,
    );
    expect(bytes).toBeLessThanOrEqual(130e6);
    // every file of the image, by top directory: nothing but these (var: dpkg's status.d only)
    const paths = files
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/)[1]!);
    expect(new Set(paths.map((p) => p.split('/')[1]))).toEqual(
      new Set(['app', 'etc', 'lib', 'lib64', 'usr', 'var']),
    );
    expect(paths.filter((p) => p.startsWith('/var/') && !p.startsWith('/var/lib/dpkg/status.d/'))).toEqual(
      [],
    );
    // under /app/node_modules, package.json files alone: no package's code
    expect(paths.filter((p) => p.startsWith('/app/node_modules/') && !p.endsWith('/package.json'))).toEqual(
      [],
    );
  });

  it('runs the control plane as containers', () => {
    expect(cluster.runtime).toBe('container');
    expect(cluster.containers?.apiserver).toMatch(/^edge-cp-/);
  });

  it('runs as 65532 on a read-only root filesystem, without a shell, on the Node of .nvmrc', async () => {
    const status = await exec([
      'node',
      '-e',
      "process.stdout.write(require('fs').readFileSync('/proc/1/status','utf8'))",
    ]);
    expect(status.output).toMatch(/^Uid:\s+65532\s+65532/m);
    const write = await exec(['node', '-e', "require('fs').writeFileSync('/app/probe', '')"]);
    expect(write.exitCode).not.toBe(0);
    expect(write.output).toMatch(/EROFS|read-only/);
    const shell = await exec(['/bin/sh', '-c', 'true']).catch((e: Error) => ({
      exitCode: -1,
      output: e.message,
    }));
    expect(shell.exitCode).not.toBe(0);
    // nothing an intruder could run but node: no shell, no package manager, no npm
    const tools = [
      '/bin/sh',
      '/bin/bash',
      '/usr/bin/env',
      '/usr/bin/apt-get',
      '/usr/bin/dpkg',
      '/usr/local/bin/npm',
    ];
    const present = await exec([
      'node',
      '-p',
      `${JSON.stringify(tools)}.filter((p) => require('fs').existsSync(p)).join()`,
    ]);
    expect(present.output.trim()).toBe('');
    const major = readFileSync(join(REPO_ROOT, '.nvmrc'), 'utf8').trim();
    expect((await exec(['node', '--version'])).output.trim()).toMatch(new RegExp(`^v${major}\\.`));
  });

  it('answers /healthz and /readyz, and serves metrics', async () => {
    await waitFor('/readyz', async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, 30_000);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).toMatch(/^edge_operator_/m);
  });

  it('brings every kind from deploy/examples to Ready', async () => {
    const objs = readManifests(join(REPO_ROOT, 'deploy/examples'))
      .filter((o) => o.kind !== 'Namespace')
      .map((o) => ({ ...o, metadata: { ...o.metadata, namespace: ns } }));
    expect(new Set(objs.map((o) => o.kind))).toEqual(new Set(BINDINGS.map((b) => b.kind).concat('Secret')));
    await apply(kube, objs, ns);
    await waitFor(
      'every object Ready',
      async () => {
        for (const b of BINDINGS)
          for (const o of (await kube.list(res(b.plural), ns)).items) if (!ready(o)) return false;
        return true;
      },
      90_000,
    );
  });

  it('deletes every object and its remote resource', async () => {
    for (const b of BINDINGS)
      for (const o of (await kube.list(res(b.plural), ns)).items)
        await kube.delete(res(b.plural), ns, o.metadata.name);
    await waitFor(
      'all finalized',
      async () => {
        for (const b of BINDINGS) if ((await kube.list(res(b.plural), ns)).items.length) return false;
        return true;
      },
      90_000,
    );
    const state = (await (
      await fetch(`${emu.url}/_emulator/state`, { headers: { authorization: `Bearer ${emu.adminKey}` } })
    ).json()) as Record<string, { metadata?: string }[]>;
    const left = Object.entries(state).flatMap(([coll, items]) =>
      ['tunnelSessions', 'tunnels', 'agents'].includes(coll)
        ? []
        : items.filter((x) => decodeMetadata(x.metadata).owner).map(() => coll),
    );
    expect(left).toEqual([]);
    // the operator logged no error and no secret value while doing all this
    expect(logs.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
    expect(logs.join('\n')).not.toContain(emu.apiKey);
  });
});

/** A CycloneDX component as syft writes it (the fields read here). */
interface Component {
  type: string;
  name: string;
  group?: string;
  version?: string;
  purl?: string;
  properties?: { name: string; value: string }[];
}

describe.skipIf(!!skipReason)("the image's SBOM (npm run image:build, syft)", () => {
  const SBOM = join(REPO_ROOT, 'dist/sbom/edge-operator.cdx.json');
  const inImage = (code: string) =>
    execFileSync(
      'docker',
      ['run', '--rm', '--network', 'none', '--entrypoint', '/usr/local/bin/node', IMAGE, '-p', code],
      { encoding: 'utf8' },
    ).trim();
  const bom = () =>
    JSON.parse(readFileSync(SBOM, 'utf8')) as {
      bomFormat: string;
      metadata: { component: { type: string; name: string; version: string } };
      components: Component[];
    };
  const ofType = (type: string) => bom().components.filter((c) => c.purl?.startsWith(`pkg:${type}/`));
  const npmName = (c: Component) => (c.group ? `${c.group}/${c.name}` : c.name);
  const location = (c: Component) => c.properties?.find((p) => p.name === 'syft:location:0:path')?.value;

  it('is written next to the image, CycloneDX, for this image', () => {
    expect(existsSync(SBOM), `${SBOM} (npm run image:build writes it)`).toBe(true);
    const b = bom();
    expect(b.bomFormat).toBe('CycloneDX');
    expect(b.metadata.component.type).toBe('container');
    expect(`${b.metadata.component.name}:${b.metadata.component.version}`).toBe(IMAGE);
  });

  it("lists glibc (libc6) and the other libraries' Debian packages, with the versions the image records", () => {
    // the image's own record: /var/lib/dpkg/status.d/<package>, from the build stage's dpkg
    const recorded = JSON.parse(
      inImage(`JSON.stringify(Object.fromEntries(fs.readdirSync('/var/lib/dpkg/status.d')
        .filter((f) => !f.endsWith('.md5sums'))
        .map((f) => [f, /^Version: (.+)$/m.exec(fs.readFileSync('/var/lib/dpkg/status.d/' + f, 'utf8'))[1]])))`),
    ) as Record<string, string>;
    expect(Object.keys(recorded)).toEqual(expect.arrayContaining(['libc6', 'libgcc-s1', 'libstdc++6']));
    const debs = ofType('deb');
    expect(Object.fromEntries(debs.map((c) => [c.name, c.version]))).toEqual(recorded);
    const libc = debs.find((c) => c.name === 'libc6')!;
    expect(libc.version).toMatch(/^2\.\d+/);
    // Debian's name and release, which vulnerability matching needs (/etc/os-release)
    expect(libc.purl).toMatch(/^pkg:deb\/debian\/libc6@.+[?&]distro=debian-\d+/);
    expect(libc.purl).toContain('upstream=glibc');
  });

  it('lists Node with the version the image runs', () => {
    const version = inImage('process.versions.node');
    const node = bom().components.filter((c) => c.name === 'node' && c.purl?.startsWith('pkg:generic/'));
    expect(node.map((c) => [c.version, location(c)])).toEqual([[version, '/usr/local/bin/node']]);
  });

  it("lists the package.json dependencies and every other bundled npm package at package-lock.json's version", () => {
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string }>;
    };
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const npm = ofType('npm');
    // each found at /app/node_modules/<path>/package.json, the path package-lock.json knows it by
    const found = npm.map((c) => {
      const at = location(c)!
        .replace(/^\/app\//, '')
        .replace(/\/package\.json$/, '');
      return { name: npmName(c), version: c.version, at, locked: lock.packages[at]?.version };
    });
    expect(found.filter((f) => f.version !== f.locked)).toEqual([]);
    // the application's dependencies, all bundled (the runtime's), by name and version
    const direct = Object.fromEntries(
      Object.keys(pkg.dependencies).map((d) => [d, lock.packages[`node_modules/${d}`]!.version]),
    );
    expect(
      Object.fromEntries(
        found
          .filter((f) => f.at === `node_modules/${f.name}` && f.name in direct)
          .map((f) => [f.name, f.version]),
      ),
    ).toEqual(direct);
    // and what they bring (pino's sonic-boom, client-node's jose, undici nothing): more than these
    expect(found.length).toBeGreaterThan(Object.keys(direct).length);
    for (const name of ['sonic-boom', 'jose', 'thread-stream'])
      expect(found.map((f) => f.name)).toContain(name);
  });
});
