// Where the repository, the local cluster and the built binaries live.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const DEFAULT_CLUSTER_DIR = join(REPO_ROOT, '.cache', 'cluster');

export function cacheDir(): string {
  return (
    process.env.EDGE_OPERATOR_CACHE ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'edge-operator')
  );
}
