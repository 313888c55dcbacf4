// What `cluster up` wrote down (state.json in the cluster directory), and whether that cluster
// still runs and answers.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { containerRunning } from './containers.ts';
import type { NodeState } from './node.ts';
import { alive } from './processes.ts';

export type ControlPlaneRuntime = 'process' | 'container';

export interface ClusterState {
  dir: string;
  kubeconfig: string;
  server: string;
  /** Absent in state files written before containers were an option. */
  runtime?: ControlPlaneRuntime;
  pids: { etcd: number; apiserver: number };
  /** Container names, when runtime is 'container'. */
  containers?: { etcd: string; apiserver: string };
  /** How kube-apiserver was started, so it can be restarted with the same flags. */
  apiserver?: { bin: string; args: string[] };
  /** With --node: containerd, kubelet, controller-manager and scheduler (node.ts). */
  node?: NodeState;
}

export function readState(dir: string): ClusterState | undefined {
  const f = join(dir, 'state.json');
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as ClusterState) : undefined;
}

export const writeState = (state: ClusterState) =>
  writeFileSync(join(state.dir, 'state.json'), JSON.stringify(state, null, 2));

/** The admin's client certificate, as the API server's CA knows it. */
export function tlsOf(dir: string) {
  return {
    ca: readFileSync(join(dir, 'ca.crt'), 'utf8'),
    cert: readFileSync(join(dir, 'admin.crt'), 'utf8'),
    key: readFileSync(join(dir, 'admin.key'), 'utf8'),
  };
}

export function get(
  url: string,
  tls: { ca: string; cert: string; key: string },
): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = request(url, { ...tls, timeout: 3000 }, (r) => {
      let body = '';
      r.on('data', (d) => {
        body += d;
      });
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
    });
    req.on('error', rej);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

export async function running(state: ClusterState): Promise<boolean> {
  if (state.runtime === 'container' && state.containers)
    return (
      (await containerRunning(state.containers.apiserver)) && (await containerRunning(state.containers.etcd))
    );
  return alive(state.pids.apiserver) && alive(state.pids.etcd);
}

export async function isReady(state: ClusterState): Promise<boolean> {
  try {
    const r = await get(`${state.server}/readyz`, tlsOf(state.dir));
    return r.status === 200 && r.body.trim() === 'ok';
  } catch {
    return false;
  }
}
