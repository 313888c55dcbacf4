// Install order: an operator started before its CRDs (a chart with crds.install=false, a
// kubectl apply of the Deployment first, an upgrade that adds a kind) would watch resources
// the API server does not serve: a "404 page not found" per kind every few seconds, and
// nothing saying what to do. Instead it asks API discovery which of its kinds are served,
// says once which CRDs are missing and how to install them, is not ready while they are, and
// starts once they are there.
import type { Logger } from 'pino';
import { GROUP, managedResource, VERSION } from '../constants.ts';
import { isKubeNotFound, isTransient, type Kube, KubeError } from './kube.ts';

/** How often discovery is asked again while CRDs are missing. */
export const CRD_RECHECK_MS = 5000;
/** How often a kind just established is listed again until its storage answers. */
const STORAGE_RECHECK_MS = 500;

/** The plurals among `plurals` that the API server does not serve in edge.tunnel.dev/v1alpha1. */
export async function missingKinds(kube: Pick<Kube, 'request'>, plurals: string[]): Promise<string[]> {
  try {
    // discovery lists a CRD's resource once the CRD is established (served)
    const list = await kube.request<{ resources?: { name: string }[] }>('GET', `/apis/${GROUP}/${VERSION}`);
    const served = new Set((list.resources ?? []).map((r) => r.name));
    return plurals.filter((p) => !served.has(p));
  } catch (err) {
    // no CRD of the group at all: the group version is not served
    if (isKubeNotFound(err)) return plurals;
    throw err;
  }
}

/**
 * The kinds whose list is not answered yet: for a moment after a CRD is established the API
 * server answers 429 "storage is (re)initializing" (or 404). Any other answer (a list, 403)
 * is the informers' to meet.
 */
async function notListable(
  kube: Pick<Kube, 'list'>,
  plurals: string[],
  namespace: string | undefined,
  clusterScoped: readonly string[],
): Promise<string[]> {
  const waiting = await Promise.all(
    plurals.map((p) =>
      kube.list(managedResource(p), clusterScoped.includes(p) ? undefined : namespace, { limit: 1 }).then(
        () => false,
        (err) => err instanceof KubeError && (err.status === 429 || err.status === 404),
      ),
    ),
  );
  return plurals.filter((_, i) => waiting[i]);
}

/** What the log line and /readyz say while CRDs are missing. */
export const missingMessage = (missing: string[]) =>
  `CRDs not installed: ${missing.map((p) => `${p}.${GROUP}`).join(', ')}; install them with ` +
  '`kubectl apply --server-side -f crds/` (or the Helm chart with crds.install=true, its default); the operator ' +
  'starts reconciling once they are there, without a restart';

/**
 * Resolves once every kind is served. Says which are missing once (and again only when that
 * changes); `onMissing` gets the reason while waiting and undefined once they are there.
 */
export async function waitForCrds(o: {
  kube: Pick<Kube, 'request' | 'list'>;
  plurals: string[];
  /** Where the kinds are listed once served (a watched namespace; undefined: all). */
  namespace?: string;
  /** Kinds of no namespace, listed as such. */
  clusterScoped?: readonly string[];
  log: Logger;
  sleep: (ms: number) => Promise<void>;
  stopped: () => boolean;
  onMissing: (reason: string | undefined) => void;
  intervalMs?: number;
}): Promise<void> {
  let said = '';
  while (!o.stopped()) {
    let missing: string[];
    try {
      missing = await missingKinds(o.kube, o.plurals);
    } catch (err) {
      // No answer (the API server away: the informers retry, and /healthz fails if that
      // lasts), or discovery refused (it is open to every authenticated user by default):
      // start, and let the watches say what they meet.
      if (!isTransient(err))
        o.log.warn(
          { err: (err as Error).message },
          'cannot ask API discovery whether the CRDs are installed',
        );
      o.onMissing(undefined);
      return;
    }
    if (!missing.length) {
      // just established: the watches start once each kind's storage answers (no failed watch)
      const starting = said ? await notListable(o.kube, o.plurals, o.namespace, o.clusterScoped ?? []) : [];
      if (starting.length) {
        o.onMissing(`CRDs installed; waiting for the API server to serve ${starting.join(', ')}`);
        await o.sleep(STORAGE_RECHECK_MS);
        continue;
      }
      if (said) o.log.info({ kinds: o.plurals.length }, 'CRDs installed: starting');
      o.onMissing(undefined);
      return;
    }
    const message = missingMessage(missing);
    if (message !== said) {
      o.log.error({ missing: missing.map((p) => `${p}.${GROUP}`) }, message);
      said = message;
    }
    o.onMissing(message);
    await o.sleep(o.intervalMs ?? CRD_RECHECK_MS);
  }
}
