// `cluster down` for a node: its processes, containers and their shims, mounts, the pods'
// network namespaces, the bridge and chain, the kubelet's cgroups.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NodeState } from './node.ts';
import { networkDown } from './node-network.ts';
import { alive, stop } from './processes.ts';
import { sh, trySh } from './shell.ts';

/** Mount points at or under one of the prefixes, deepest first. */
function mountsUnder(prefixes: string[]): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4]?.replace(/\\040/g, ' '))
    .filter((p): p is string => !!p && prefixes.some((x) => p === x || p.startsWith(`${x}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Network namespaces holding an address of the node's subnet (its pods'), by name. */
function podNetns(n: NodeState): string[] {
  const prefix = n.subnet.split('.').slice(0, 3).join('.');
  let names: string[] = [];
  try {
    names = readdirSync('/run/netns');
  } catch {
    return [];
  }
  return names.filter((name) => {
    try {
      return sh('ip', ['-n', name, '-4', '-o', 'addr']).includes(` ${prefix}.`);
    } catch {
      return false;
    }
  });
}

export async function nodeDown(dir: string, n: NodeState, log: (s: string) => void): Promise<void> {
  // the kubelet first, so it does not restart what is removed below
  await stop([n.pids.kubelet, n.pids.controllerManager, n.pids.scheduler]);
  if (alive(n.pids.containerd)) {
    const ctr = (...a: string[]) => sh('ctr', ['--address', n.socket, '-n', 'k8s.io', ...a]);
    try {
      const tasks = ctr('tasks', 'ls', '-q').split('\n').filter(Boolean);
      for (const t of tasks)
        trySh('ctr', ['--address', n.socket, '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', t]);
      const deadline = Date.now() + 10_000;
      for (const t of tasks)
        while (
          !trySh('ctr', ['--address', n.socket, '-n', 'k8s.io', 'tasks', 'delete', t]) &&
          Date.now() < deadline
        )
          await sleep(200);
      for (const c of ctr('containers', 'ls', '-q').split('\n').filter(Boolean))
        trySh('ctr', ['--address', n.socket, '-n', 'k8s.io', 'containers', 'delete', c]);
    } catch (e) {
      log(`node: removing containers: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  await stop([n.pids.containerd]);
  // shims of this containerd that outlived it
  for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (cmd.includes('containerd-shim') && cmd.includes(n.socket)) process.kill(Number(p), 'SIGKILL');
    } catch {}
  }
  for (const ns of podNetns(n)) trySh('ip', ['netns', 'delete', ns]);
  for (const m of mountsUnder([resolve(dir), n.runDir])) trySh('umount', ['-l', m]);
  networkDown(n);
  // the kubelet's cgroups (kubepods and below), empty once the containers are gone
  for (const ctl of existsSync('/sys/fs/cgroup') ? readdirSync('/sys/fs/cgroup') : [])
    trySh('sh', [
      '-c',
      `[ -d /sys/fs/cgroup/${ctl}/kubepods ] && find /sys/fs/cgroup/${ctl}/kubepods -depth -type d -exec rmdir {} + ; true`,
    ]);
  rmSync(n.runDir, { recursive: true, force: true });
}
