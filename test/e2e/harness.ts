import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { inject } from 'vitest';
import { createClient, type EdgeClient } from '../../src/api/client.ts';
import { type Emulator, startEmulator } from '../../src/emulator/server.ts';
import { GROUP, VERSION } from '../../src/operator/kinds/crd-schema.ts';
import { Kube, type KubeObject, loadKubeConfig } from '../../src/operator/runtime/kube.ts';

export const skipReason = inject('e2eSkip');
export const kubeconfig = inject('kubeconfig');
const EDGECTL = join(import.meta.dirname, '../../src/cli/edgectl.ts');

export const res = (plural: string) => ({ group: GROUP, version: VERSION, plural });
export const NAMESPACES = { group: '', version: 'v1', plural: 'namespaces' };

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
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

export interface OperatorProcess {
  proc: ChildProcess;
  metricsUrl: string;
  logs: string[];
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function startOperator(
  emu: Emulator,
  namespace: string,
  extra: string[] = [],
): Promise<OperatorProcess> {
  const port = await freePort();
  const logs: string[] = [];
  const proc = spawn(
    process.execPath,
    [
      EDGECTL,
      'operator',
      '--kubeconfig',
      kubeconfig,
      '--api-url',
      emu.url,
      '--namespaces',
      namespace,
      '--listen',
      `127.0.0.1:${port}`,
      '--cluster-id',
      `e2e-${namespace}`,
      '--api-rate-limit',
      '100000',
      ...extra,
    ],
    {
      env: { ...process.env, EDGE_API_KEY: emu.apiKey, LOG_LEVEL: 'debug' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  for (const s of [proc.stdout!, proc.stderr!])
    s.on('data', (d: Buffer) => logs.push(...d.toString().split('\n').filter(Boolean)));
  const metricsUrl = `http://127.0.0.1:${port}/metrics`;
  await waitFor(
    'operator /healthz',
    async () => {
      if (proc.exitCode !== null) {
        throw new Fatal(`operator exited with code ${proc.exitCode}:\n${logs.slice(-10).join('\n')}`);
      }
      return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
    },
    20_000,
  );
  return {
    proc,
    metricsUrl,
    logs,
    kill: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill(signal);
      }),
  };
}

export interface World {
  kube: Kube;
  emu: Emulator;
  api: EdgeClient;
  ns: string;
  close(): Promise<void>;
}

export async function world(prefix: string): Promise<World> {
  const kube = new Kube(loadKubeConfig(kubeconfig));
  const emu = await startEmulator({});
  const api = createClient({ baseUrl: emu.url, apiKey: emu.apiKey, rateLimitPerMinute: Infinity });
  const ns = `${prefix}-${Date.now().toString(36)}`;
  await kube.create(NAMESPACES, undefined, { metadata: { name: ns } });
  return {
    kube,
    emu,
    api,
    ns,
    close: async () => {
      await kube.delete(NAMESPACES, undefined, ns).catch(() => {});
      await api.close();
      await emu.close();
    },
  };
}

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

export const ready = (o: KubeObject | undefined) =>
  (o?.status?.conditions as { type: string; status: string }[] | undefined)?.some(
    (c) => c.type === 'Ready' && c.status === 'True',
  );
export const condition = (o: KubeObject | undefined, type: string) =>
  (
    o?.status?.conditions as { type: string; status: string; reason: string; message: string }[] | undefined
  )?.find((c) => c.type === type);

export async function metric(
  url: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(url)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      total += Number(line.split(' ').at(-1));
  }
  return total;
}
