// Where the Kubernetes API server is and how to authenticate to it (load-kube-target.ts says
// which of the two ways), and what both ways share.
import type { Dispatcher } from 'undici';

export interface KubeTarget {
  server: string;
  /** The kubeconfig context, or "(in-cluster)". */
  context: string;
  /** What one request needs: its authentication headers and the dispatcher carrying the TLS trust and client certificate. */
  auth(): Promise<{ headers: Record<string, string>; dispatcher: Dispatcher }>;
}

/** A kubeconfig (or a pod's service account) that cannot be used: names what is wrong. */
export class KubeConfigError extends Error {
  override name = 'KubeConfigError';
}

/** The context asked for by name (edgectl's --context) is not in the kubeconfig. */
export class UnknownContextError extends KubeConfigError {
  override name = 'UnknownContextError';
}

/**
 * Credentials read from files serve this long before they are read again: reading and decoding
 * them was 7% of the CPU of each request in a bulk apply, and a rotated token or certificate
 * file is used within a second.
 */
const AUTH_REUSE_MS = 1000;

/** `auth`, its result shared by the requests of one second (a failure is not kept). */
export function reusedBriefly<T>(auth: () => Promise<T>): () => Promise<T> {
  let last: { at: number; auth: Promise<T> } | undefined;
  return () => {
    const now = Date.now();
    if (last && now - last.at >= 0 && now - last.at < AUTH_REUSE_MS) return last.auth;
    const current = { at: now, auth: auth() };
    last = current;
    current.auth.catch(() => {
      if (last === current) last = undefined;
    });
    return current.auth;
  };
}

export const firstLine = (err: unknown) => String((err as Error)?.message ?? err).split('\n')[0];
