// vitest global setup: one scratch directory for the run's temporary files (scratch.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'edge-tests-'));
  process.env.EDGE_TEST_SCRATCH = root;
  return () => rmSync(root, { recursive: true, force: true });
}
