// An account's connection: its URL checked against the allow-list, its limits, its key read
// from its Secret and proved with one cheap request, its client in the registry. A refusal is
// a value (AccountFailure) the reconciler's plan turns into the account's status.
import type { Logger } from 'pino';
import { isKubeNotFound, type Kube, KubeError, type KubeObject } from '../kube/kube.ts';
import { secretValue } from '../kube/secrets.ts';
import type { AccountKind, AccountSpec } from './kinds.ts';
import { type AccountLimits, edgeAccountRefusal } from './limits.ts';
import { type Connected, failed, type KeyProbe, REFUSED_RETRY_MS, stalled } from './probe.ts';
import type { AccountRegistry } from './registry.ts';
import { normalizeUrl, urlAllowed } from './resolve.ts';

const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
/** An API key travels in an Authorization header: printable ASCII without spaces. */
const API_KEY = /^[!-~]+$/;
/** How soon an account beyond a limit looks again (another may have gone meanwhile). */
const LIMIT_RECHECK_MS = 15_000;

type Spec = AccountSpec;

/** Where an account's key Secret is: an EdgeAccount's namespace, else the one it names or the operator's. */
export function secretNamespace(kind: AccountKind, a: KubeObject, operatorNamespace: string): string {
  return kind === 'EdgeAccount'
    ? a.metadata.namespace!
    : ((a.spec as unknown as Spec).apiKeySecretRef.namespace ?? operatorNamespace);
}

export interface ConnectDeps {
  kube: Kube;
  log: Logger;
  registry: AccountRegistry;
  keyProbe: KeyProbe;
  installation: { url?: string; perMinute: number };
  allowedUrls: string[];
  limits?: AccountLimits;
  edgeAccountsIn(namespace: string): KubeObject[];
  secretNamespace(kind: AccountKind, account: KubeObject): string;
}

/**
 * The account's client from its Secret and URL; one cheap request when the key is new. Why it
 * cannot serve is a value; only an unexpected error (the API server's, the network's) is thrown.
 */
export async function connect(
  d: ConnectDeps,
  id: string,
  kind: AccountKind,
  obj: KubeObject,
): Promise<Connected> {
  const spec = obj.spec as unknown as Spec;
  const { installation } = d;
  const url = spec.apiURL ?? installation.url;
  if (!url)
    return stalled('APIURLNotAllowed', 'no spec.apiURL, and the operator has no --api-url to default to');
  // new URL() forgives what the client does not (a trailing space): said here, not retried for ever
  if (!normalizeUrl(url) || /\s/.test(url))
    return stalled(
      'APIURLInvalid',
      `spec.apiURL ${JSON.stringify(url)} is not an http(s) URL without whitespace, credentials, query or fragment`,
    );
  if (!urlAllowed(url, installation.url, d.allowedUrls))
    return stalled(
      'APIURLNotAllowed',
      `spec.apiURL ${url} is not the operator's API URL nor one the installation allows (--account-api-urls, chart value accounts.allowedAPIURLs)`,
    );
  const limits = d.limits;
  const over =
    kind === 'EdgeAccount' && limits
      ? edgeAccountRefusal(obj, d.edgeAccountsIn(obj.metadata.namespace ?? ''), limits)
      : undefined;
  // no client is made for it: nothing is held for an account beyond the limit
  if (over) return failed({ state: 'stalled', ...over }, LIMIT_RECHECK_MS);
  const ref = spec.apiKeySecretRef;
  const ns = d.secretNamespace(kind, obj);
  const where = `Secret ${ns}/${ref.name}, key ${ref.key}`;
  let secret: KubeObject | undefined;
  try {
    secret = await d.kube.get(SECRETS, ns, ref.name);
  } catch (err) {
    // the operator may not read it (a ClusterEdgeAccount's Secret outside watchNamespaces):
    // a condition that says so, not an account with no status at all
    if (err instanceof KubeError && err.status === 403)
      return stalled(
        'KeySecretForbidden',
        `${where}: the operator may not read it (with watchNamespaces, a ClusterEdgeAccount's Secret must be in a watched namespace)`,
      );
    if (!isKubeNotFound(err)) throw err;
  }
  const entry = d.registry.get(id);
  const data = secretValue(secret, ref.key);
  if (data === undefined) {
    // being deleted with its Secret in the same sweep: the key in memory serves its objects' deletes
    if (obj.metadata.deletionTimestamp && entry?.usable) return { ok: true, url: entry.url };
    return stalled('KeySecretNotFound', secret ? `${where}: no such key` : `${where}: Secret not found`);
  }
  const key = Buffer.from(data, 'base64')
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (!API_KEY.test(key))
    return stalled('KeyInvalid', `${where}: not printable ASCII without spaces (the key is not shown)`);
  const change = d.registry.set(id, {
    url,
    key,
    perMinute: spec.rateLimitPerMinute ?? installation.perMinute,
  });
  const now = d.registry.get(id)!;
  const refused = now.phase?.reason === 'KeyRefused';
  // a key the API refused since it was checked (revoked on the dashboard) is checked again:
  // refused, its objects wait (WaitingForAccount) instead of each spending the budget on 401s
  if (change === 'same' && now.usable && !now.suspect) return { ok: true, url };
  const refusedAgo = Date.now() - (d.keyProbe.refusedAt.get(id) ?? 0);
  if (change === 'same' && refused && refusedAgo < REFUSED_RETRY_MS)
    return failed(now.phase!, REFUSED_RETRY_MS);
  if (change === 'rotated')
    d.log.info({ account: id }, 'account key or URL changed: the next request uses it');
  return (await d.keyProbe.probe(id, where)) ?? { ok: true, url };
}
