// The node's network: a bridge of its own for the pods and two DNAT rules to the host's loopback
// (the `kubernetes` Service address to the API server, the gateway to any loopback port), named
// after the cluster directory so that two clusters keep apart and `down` removes exactly its own.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { sh, trySh } from './shell.ts';

/** The `kubernetes` Service address (first of the API server's --service-cluster-ip-range). */
export const KUBERNETES_SERVICE_IP = '10.0.0.1';

export type NodeNames = ReturnType<typeof nodeNames>;

export function nodeNames(dir: string) {
  const h = createHash('sha256').update(resolve(dir)).digest('hex');
  // 15 characters at most for a device name; the third octet spreads clusters apart
  const octet = 1 + (Number.parseInt(h.slice(0, 2), 16) % 250);
  return {
    bridge: `edgebr-${h.slice(0, 8)}`,
    chain: `EDGE-NODE-${h.slice(0, 8).toUpperCase()}`,
    subnet: `10.213.${octet}.0/24`,
    gateway: `10.213.${octet}.1`,
    runDir: `/run/edge-node-${h.slice(0, 8)}`,
  };
}

export function networkUp(n: NodeNames, apiPort: number) {
  if (!trySh('ip', ['link', 'show', n.bridge])) sh('ip', ['link', 'add', n.bridge, 'type', 'bridge']);
  trySh('ip', ['addr', 'add', `${n.gateway}/24`, 'dev', n.bridge]);
  sh('ip', ['link', 'set', n.bridge, 'up']);
  writeFileSync(`/proc/sys/net/ipv4/conf/${n.bridge}/route_localnet`, '1');
  trySh('iptables', ['-t', 'nat', '-N', n.chain]);
  sh('iptables', ['-t', 'nat', '-F', n.chain]);
  if (!trySh('iptables', ['-t', 'nat', '-C', 'PREROUTING', '-i', n.bridge, '-j', n.chain]))
    sh('iptables', ['-t', 'nat', '-A', 'PREROUTING', '-i', n.bridge, '-j', n.chain]);
  const rule = (...a: string[]) => sh('iptables', ['-t', 'nat', '-A', n.chain, ...a]);
  rule(
    '-d',
    KUBERNETES_SERVICE_IP,
    '-p',
    'tcp',
    '--dport',
    '443',
    '-j',
    'DNAT',
    '--to-destination',
    `127.0.0.1:${apiPort}`,
  );
  rule('-d', n.gateway, '-p', 'tcp', '-j', 'DNAT', '--to-destination', '127.0.0.1');
}

/** The bridge and the chain gone; what was never made is skipped. */
export function networkDown(n: { bridge: string; chain: string }): void {
  trySh('iptables', ['-t', 'nat', '-D', 'PREROUTING', '-i', n.bridge, '-j', n.chain]);
  trySh('iptables', ['-t', 'nat', '-F', n.chain]);
  trySh('iptables', ['-t', 'nat', '-X', n.chain]);
  trySh('ip', ['link', 'delete', n.bridge]);
}
