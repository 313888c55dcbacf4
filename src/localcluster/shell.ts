// Commands the node runs (ip, iptables, ctr): their output, or whether they succeeded.
import { execFileSync } from 'node:child_process';

export const sh = (cmd: string, args: string[], input?: string): string =>
  execFileSync(cmd, args, { encoding: 'utf8', stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'], input });

export const trySh = (cmd: string, args: string[]): boolean => {
  try {
    sh(cmd, args);
    return true;
  } catch {
    return false;
  }
};
