// Temporary directories for tests, all under one directory that the test run's global
// setup (scratch-setup.ts) removes at the end: runs do not leave kubeconfigs, data files and
// exports behind in /tmp. Worker processes are ended, not exited, so they cannot clean up.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function scratchDir(prefix: string): string {
  const root = process.env.EDGE_TEST_SCRATCH ?? join(tmpdir(), 'edge-tests');
  mkdirSync(root, { recursive: true });
  return mkdtempSync(join(root, prefix));
}
