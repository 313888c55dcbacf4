// `edgectl cluster load`: images from the Docker engine into the node's containerd.
import { spawn } from 'node:child_process';
import type { NodeState } from './node.ts';

/** Puts images from the Docker engine into the node's runtime (`edgectl cluster load`). */
export async function loadImages(n: NodeState, images: string[]): Promise<void> {
  await new Promise<void>((res, rej) => {
    const save = spawn('docker', ['save', ...images], { stdio: ['ignore', 'pipe', 'pipe'] });
    const imp = spawn('ctr', ['--address', n.socket, '-n', 'k8s.io', 'images', 'import', '-'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let err = '';
    save.stderr.on('data', (d) => {
      err += d;
    });
    imp.stderr.on('data', (d) => {
      err += d;
    });
    save.on('error', (e) => rej(new Error(`docker save: ${e.message}`)));
    imp.on('error', (e) => rej(new Error(`ctr import: ${e.message}`)));
    save.stdout.pipe(imp.stdin);
    let pending = 2;
    let failed = false;
    const done = (what: string) => (code: number | null) => {
      if (code !== 0 && !failed) {
        failed = true;
        rej(new Error(`${what} failed: ${err.trim().split('\n')[0] ?? `exit ${code}`}`));
      }
      if (--pending === 0 && !failed) res();
    };
    save.on('close', done('docker save'));
    imp.on('close', done('ctr images import'));
  });
}
