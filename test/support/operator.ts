// Shared by the e2e suite and the benchmarks (no vitest imports here): Kubernetes object
// helpers, waiting, and the operator as a real child process.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import type { Emulator } from '../../src/emulator/server.ts';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { GROUP, managedResource, VERSION } from '../../src/operator/runtime/constants.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';

export const res = managedResource;
/** The plural of a managed kind (throws for a kind without a binding). */
export const pluralOf = (kind: string): string => {
  const b = BINDINGS.find((x) => x.kind === kind);
  if (!b) throw new Error(`no binding for ${kind}`);
  return b.plural;
};
export const NAMESPACES = { group: '', version: 'v1', plural: 'namespaces' };

export const obj = (
  kind: string,
  ns: string,
  name: string,
  spec: Record<string, unknown>,
  annotations?: Record<string, string>,
): KubeObject => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind,
  metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
  spec,
});

type Cond = { type: string; status: string; reason: string; message: string };
export const condition = (o: KubeObject | undefined, type: string) =>
  (o?.status?.conditions as Cond[] | undefined)?.find((c) => c.type === type);
export const ready = (o: KubeObject | undefined) => condition(o, 'Ready')?.status === 'True';

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Thrown inside a waitFor condition: stop waiting at once. */
export class Fatal extends Error {}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  intervalMs = 150,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      if (e instanceof Fatal) throw e;
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface OperatorProcess {
  proc: ChildProcess;
  metricsUrl: string;
  /** This process's output lines. */
  logs: string[];
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Every line any operator started here printed (the secrets scans read them). */
export const allOperatorLogs: string[] = [];
/** Exits nobody asked for (an operator crash), across every operator started here. */
export const unexpectedExits: string[] = [];

/**
 * The environment the image gives the operator (the Dockerfile's last ENV lines): the
 * benchmarks run the bundle with it, as users do.
 */
export function imageEnv(): Record<string, string> {
  const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8').replaceAll('\\\n', ' ');
  const stages = dockerfile.split(/^FROM /m);
  const env: Record<string, string> = {};
  for (const line of stages.at(-1)!.split('\n'))
    if (line.startsWith('ENV '))
      for (const [, k, v] of line.slice(4).matchAll(/(\w+)=("[^"]*"|\S+)/g))
        env[k!] = v!.replace(/^"(.*)"$/, '$1');
  return env;
}

/** The flags the image's ENTRYPOINT gives node before the script. */
export function imageNodeArgs(): string[] {
  const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
  const entry = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile.split(/^FROM /m).at(-1)!)?.[1];
  const argv = entry ? (JSON.parse(entry) as string[]) : [];
  return argv.slice(1).filter((a) => a.startsWith('--'));
}

export async function startOperatorProcess(o: {
  emu: Emulator;
  kubeconfig: string;
  /**
   * Run as a pod does, on a service account (token and ca.crt in this folder) instead of the
   * kubeconfig: the server is the kubeconfig's, named by KUBERNETES_SERVICE_HOST and _PORT.
   */
  serviceAccountDir?: string;
  namespace: string;
  clusterId: string;
  port: number;
  extra?: string[];
  logLevel?: string;
}): Promise<OperatorProcess> {
  const server = o.serviceAccountDir ? new URL(kubeconfigTarget(o.kubeconfig).server) : undefined;
  const logs: string[] = [];
  const proc = spawn(
    process.execPath,
    [
      // e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" for the benchmarks' profiles
      ...(process.env.EDGE_OPERATOR_ENTRY?.startsWith('bundle/') ? imageNodeArgs() : []),
      ...(process.env.EDGE_OPERATOR_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      // the benchmarks run what users run (the bundle or dist/): loading the sources costs
      // Node's type stripping (a WebAssembly compiler) in memory and CPU
      resolve(REPO_ROOT, process.env.EDGE_OPERATOR_ENTRY ?? 'src/cli/edgectl.ts'),
      'operator',
      ...(server ? [] : ['--kubeconfig', o.kubeconfig]),
      '--api-url',
      o.emu.url,
      '--namespaces',
      o.namespace,
      '--listen',
      `127.0.0.1:${o.port}`,
      '--cluster-id',
      o.clusterId,
      // each test's Lease and digest key live in its own namespace (later flags win)
      '--leader-election-namespace',
      o.namespace,
      ...(o.extra ?? []),
    ],
    {
      env: {
        ...process.env,
        ...(process.env.EDGE_OPERATOR_ENTRY?.startsWith('bundle/') ? imageEnv() : {}),
        EDGE_API_KEY: o.emu.apiKey,
        LOG_LEVEL: process.env.EDGE_TEST_LOG_LEVEL ?? o.logLevel ?? 'info',
        ...(server
          ? {
              KUBECONFIG: '',
              KUBERNETES_SERVICE_HOST: server.hostname.replace(/^\[|\]$/g, ''),
              KUBERNETES_SERVICE_PORT: server.port || '443',
              EDGE_SERVICE_ACCOUNT_DIR: o.serviceAccountDir,
            }
          : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  for (const stream of [proc.stdout!, proc.stderr!]) {
    stream.on('data', (d: Buffer) => {
      const lines = d.toString().split('\n').filter(Boolean);
      logs.push(...lines);
      allOperatorLogs.push(...lines);
    });
  }
  let killed = false;
  proc.once('exit', (code, signal) => {
    if (!killed) unexpectedExits.push(`operator exited by itself: code ${code}, signal ${signal}`);
  });
  await waitFor(
    'operator /healthz',
    async () => {
      if (proc.exitCode !== null) {
        throw new Fatal(`operator exited with code ${proc.exitCode}:\n${logs.slice(-10).join('\n')}`);
      }
      // this process's own start line, so another process on a busy port is never taken for it
      return (
        logs.some((l) => l.includes('starting edge-operator')) &&
        (await fetch(`http://127.0.0.1:${o.port}/healthz`)).ok
      );
    },
    30_000,
  );
  return {
    proc,
    metricsUrl: `http://127.0.0.1:${o.port}/metrics`,
    logs,
    kill: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        killed = true;
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill(signal);
      }),
  };
}

/** Prometheus text -> series name with labels -> value. */
export async function metrics(url: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await (await fetch(url)).text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

export const sumMetric = (
  m: Map<string, number>,
  name: string,
  filter: (labels: string) => boolean = () => true,
) => [...m].filter(([k]) => k.startsWith(`${name}{`) && filter(k)).reduce((n, [, v]) => n + v, 0);

/** The operator's Edge API requests so far, by `operation status` (from its own counters). */
export async function apiRequests(url: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  // summed over accounts
  for (const [k, v] of await metrics(url)) {
    if (!k.startsWith('edge_api_requests_total{') || !v) continue;
    const op = /operation="([^"]+)"/.exec(k)?.[1];
    const status = /status="(\d+)"/.exec(k)?.[1];
    if (op && status) out[`${op} ${status}`] = (out[`${op} ${status}`] ?? 0) + v;
  }
  return out;
}

/** What grew between two readings of apiRequests. */
export const requestsSince = (now: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(now)
      .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
      .filter(([, v]) => v > 0),
  );

/** API writes (creates, updates, deletes, module PUTs) among apiRequests. */
export const apiWrites = (r: Record<string, number>) =>
  Object.entries(r)
    .filter(([k]) => /\.(create|update|delete|put)\w* /.test(k))
    .reduce((n, [, v]) => n + v, 0);
