// Every holder a Lease has had, and when one watch saw it: both ends of a leader handoff on
// one clock (the old leader's release, the new one's take), whatever the pods' clocks say.
import type { Kube } from '../../src/operator/runtime/kube/kube.ts';

const LEASES = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };

export interface LeaseWatch {
  /** The holders in order ('' once released), with when the watch saw each (ms, the given clock). */
  readonly seen: { holder: string; at: number }[];
  stop(): Promise<void>;
}

export async function watchLease(
  kube: Kube,
  ns: string,
  name: string,
  now: () => number = Date.now,
): Promise<LeaseWatch> {
  const seen: LeaseWatch['seen'] = [];
  const abort = new AbortController();
  const rv = (await kube.list(LEASES, ns)).metadata.resourceVersion;
  const watching = kube
    .watch(
      LEASES,
      ns,
      rv,
      (e) => {
        if (e.type === 'BOOKMARK' || e.object.metadata?.name !== name) return;
        const holder = (e.object.spec as { holderIdentity?: string } | undefined)?.holderIdentity;
        seen.push({ holder: holder ?? '', at: now() });
      },
      { signal: abort.signal, idleMs: 120_000, timeoutSeconds: 120 },
    )
    .catch(() => {});
  return {
    seen,
    async stop() {
      abort.abort();
      await watching;
    },
  };
}
