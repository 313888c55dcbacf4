// Which binaries a local cluster builds: a control plane without a node (`edgectl operator
// --local`, `npm start`, the e2e suite) only kube-apiserver and etcd; a node
// (`cluster up --node`) the controllers and the kubelet too. test/controlplane/build.sh builds
// the components it is given, run here with a stand-in `go` that records what it is asked.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const build = { calls: [] as { file: string; args: readonly string[] }[], out: '' };
const { binariesFor, buildScript, ensureBinaries, findBinaries } = await import(
  '../../src/localcluster/binaries.ts'
);
const realRun = buildScript.run;
const { REPO_ROOT } = await import('../../src/localcluster/paths.ts');

let dir: string;
const saved = { cache: process.env.EDGE_OPERATOR_CACHE, bin: process.env.EDGE_CONTROLPLANE_BIN };
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'edge-binaries-'));
  process.env.EDGE_OPERATOR_CACHE = join(dir, 'cache');
  process.env.EDGE_CONTROLPLANE_BIN = join(dir, 'prebuilt');
  mkdirSync(join(dir, 'prebuilt'));
  build.calls = [];
  build.out = join(dir, 'cache', 'bin');
  // the build script asked, recorded, not run
  buildScript.run = (file, args) => {
    build.calls.push({ file, args });
    return `${build.out}\n`;
  };
});
afterEach(() => {
  buildScript.run = realRun;
  rmSync(dir, { recursive: true, force: true });
  for (const [k, v] of [
    ['EDGE_OPERATOR_CACHE', saved.cache],
    ['EDGE_CONTROLPLANE_BIN', saved.bin],
  ] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});
const prebuilt = (...names: string[]) => {
  for (const n of names) writeFileSync(join(dir, 'prebuilt', n), '');
};
const quiet = () => {};

describe('binariesFor', () => {
  it('a control plane: kube-apiserver and etcd only', () => {
    expect(binariesFor(false)).toEqual(['kube-apiserver', 'etcd']);
  });
  it('with a node: the controllers and the kubelet too', () => {
    expect(binariesFor(true)).toEqual([
      'kube-apiserver',
      'etcd',
      'kube-controller-manager',
      'kube-scheduler',
      'kubelet',
    ]);
  });
});

describe('ensureBinaries', () => {
  it('without a node, builds only kube-apiserver and etcd', () => {
    expect(ensureBinaries(quiet)).toBe(build.out);
    expect(build.calls).toEqual([
      { file: join(REPO_ROOT, 'test/controlplane/build.sh'), args: ['kube-apiserver', 'etcd'] },
    ]);
  });

  it('with a node, asks for the node binaries too', () => {
    ensureBinaries(quiet, true);
    expect(build.calls.map((c) => c.args)).toEqual([binariesFor(true)]);
  });

  it('builds nothing when what the cluster runs is there, though the node binaries are not', () => {
    prebuilt('kube-apiserver', 'etcd');
    expect(findBinaries()).toBe(join(dir, 'prebuilt'));
    expect(ensureBinaries(quiet)).toBe(join(dir, 'prebuilt'));
    expect(build.calls).toEqual([]);
    // a node needs more
    ensureBinaries(quiet, true);
    expect(build.calls.map((c) => c.args)).toEqual([binariesFor(true)]);
  });

  it('says what it builds', () => {
    const lines: string[] = [];
    ensureBinaries((s) => lines.push(s));
    expect(lines.join('\n')).toContain('building kube-apiserver, etcd from their Go modules');
    expect(lines.join('\n')).not.toContain('kubelet');
  });
});

/** build.sh with a stand-in `go` on PATH: `go list -m` answers versions, `go build` writes its -o. */
function runBuildScript(args: string[], env: Record<string, string> = {}) {
  const fake = join(dir, 'fake-go');
  mkdirSync(fake, { recursive: true });
  const log = join(dir, 'go.log');
  writeFileSync(
    join(fake, 'go'),
    [
      '#!/bin/sh',
      `echo "$*" >> '${log}'`,
      'case "$1" in',
      '  list) case "$5" in k8s.io/client-go) echo v0.36.2 ;; *) echo v1.2.3 ;; esac ;;',
      '  build) while [ $# -gt 0 ]; do if [ "$1" = -o ]; then : > "$2"; chmod +x "$2"; fi; shift; done ;;',
      'esac',
      '',
    ].join('\n'),
  );
  chmodSync(join(fake, 'go'), 0o755);
  const run = spawnSync(join(REPO_ROOT, 'test/controlplane/build.sh'), args, {
    encoding: 'utf8',
    env: {
      ...process.env,
      PATH: `${fake}:${process.env.PATH}`,
      EDGE_OPERATOR_CACHE: join(dir, 'cache'),
      EDGE_SKIP_PACKAGING_TOOLS: '',
      ...env,
    },
  });
  const status = run.status;
  const stderr = run.stderr;
  const builds = (() => {
    try {
      return readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('build '));
    } catch {
      return [];
    }
  })();
  return { status, stderr, builds, packages: builds.map((l) => l.split(' ').at(-1)) };
}

describe('test/controlplane/build.sh', { timeout: 30_000 }, () => {
  it('builds the components it is given, and only those', () => {
    const r = runBuildScript(['kube-apiserver', 'etcd']);
    expect(r.status).toBe(0);
    expect(r.packages).toEqual(['k8s.io/kubernetes/cmd/kube-apiserver', 'go.etcd.io/etcd/server/v3']);
    // a second run finds them cached
    expect(runBuildScript(['kube-apiserver', 'etcd']).packages).toEqual(r.packages);
  });

  it('refuses a component it does not know, before building anything', () => {
    const r = runBuildScript(['kube-apiserver', 'kube-proxy']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('no component kube-proxy');
    expect(r.builds).toEqual([]);
  });

  it("stamps helm with its client-go's Kubernetes version (the chart's kubeVersion needs >= 1.31)", () => {
    const r = runBuildScript(['helm']);
    expect(r.status).toBe(0);
    expect(r.builds).toHaveLength(1);
    for (const p of ['helm.sh/helm/v3/pkg/chartutil', 'helm.sh/helm/v3/pkg/lint/rules']) {
      expect(r.builds[0]).toContain(`-X ${p}.k8sVersionMajor=1 -X ${p}.k8sVersionMinor=36`);
    }
    expect(r.builds[0]).toContain(join(dir, 'cache/bin/helm-v1.2.3-k8s1.36.tmp'));
  });
});
