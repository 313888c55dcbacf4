// Processes the local cluster starts detached (so `up` can return) and stops by pid.
import { spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // a detached child that exited stays a zombie until its (gone) parent's reaper runs
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
};

/** A function that starts a detached process with its output appended to `<dir>/<name>.log`. */
export const spawnLoggedIn =
  (dir: string) =>
  (name: string, cmd: string, args: string[]): number => {
    const out = openSync(join(dir, `${name}.log`), 'a');
    const p = spawn(cmd, args, { detached: true, stdio: ['ignore', out, out] });
    p.unref();
    return p.pid!;
  };

/** SIGTERM, up to 10 s, then SIGKILL; a pid of 0 is nothing to stop. */
export async function stop(pids: number[]): Promise<void> {
  for (const pid of pids) if (pid && alive(pid)) process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 10_000;
  while (pids.some((p) => p && alive(p)) && Date.now() < deadline) await sleep(100);
  for (const pid of pids) if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
}
