// SIGTERM reaches the operator while it starts, as PID 1 of its own PID namespace (as in a
// container, where a signal without a handler is ignored and the pod waits out its grace period
// for the kill): the start-up reads wait for an API server out of reach, and the process must
// still exit at once.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { unreachableKubeconfig } from '../support/scratch.ts';

/** Why PID namespaces cannot be made here (not root, no unshare), or undefined. */
function noPidNamespace(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root for a PID namespace (unshare --pid)';
  try {
    execFileSync('unshare', ['--fork', '--pid', 'true'], { stdio: 'ignore' });
  } catch {
    return 'unshare --pid does not work here';
  }
  return undefined;
}
const skip = noPidNamespace();
if (skip && process.env.CI === 'true') throw new Error(`operator signals: ${skip}`);

let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill('SIGKILL');
  child = undefined;
});

/** The PID (in this namespace) of unshare's child: the operator, PID 1 of its own namespace. */
function childOf(pid: number): number | undefined {
  try {
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
    return kids[0] ? Number(kids[0]) : undefined;
  } catch {
    return undefined;
  }
}

it.skipIf(!!skip)(
  'a SIGTERM while it waits for an API server out of reach ends it at once, as PID 1',
  async () => {
    const kubeconfig = unreachableKubeconfig('signals-');
    child = spawn(
      'unshare',
      [
        '--fork',
        '--pid',
        '--kill-child',
        process.execPath,
        join(REPO_ROOT, 'src/cli/edgectl.ts'),
        'operator',
        '--kubeconfig',
        kubeconfig,
        '--api-url',
        'http://127.0.0.1:1',
        '--api-key',
        'k',
        '--cluster-id',
        'signals',
        '--listen',
        '127.0.0.1:0',
        '--leader-elect=false',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    const exited = new Promise<number | null>((r) => child!.on('exit', (code) => r(code)));
    // started, and waiting for the API server (the digest key's read)
    let pid = childOf(child.pid!);
    for (let i = 0; i < 100 && !pid; i++) {
      await new Promise((r) => setTimeout(r, 50));
      pid = childOf(child.pid!);
    }
    expect(pid).toBeDefined();
    await new Promise((r) => setTimeout(r, 2500));
    const sentAt = Date.now();
    process.kill(pid!, 'SIGTERM');
    const code = await Promise.race([
      exited,
      new Promise<'still running'>((r) => setTimeout(() => r('still running'), 5000)),
    ]);
    expect(code).toBe(0);
    expect(Date.now() - sentAt).toBeLessThan(3000);
    expect(err).toContain('SIGTERM while starting, exiting');
  },
);
