// Temporary directories for tests, all under one directory that the test run's global
// setup (scratch-setup.ts) removes at the end: runs do not leave kubeconfigs, data files and
// exports behind in /tmp. Worker processes are ended, not exited, so they cannot clean up.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function scratchDir(prefix: string): string {
  const root = process.env.EDGE_TEST_SCRATCH ?? join(tmpdir(), 'edge-tests');
  mkdirSync(root, { recursive: true });
  return mkdtempSync(join(root, prefix));
}

/**
 * A kubeconfig for an API server that is not there (a port where nothing listens): what a
 * client meets while the API server is down or out of reach.
 */
export function unreachableKubeconfig(prefix = 'kc-'): string {
  const file = join(scratchDir(prefix), 'config');
  writeFileSync(
    file,
    `clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: x
`,
  );
  return file;
}
