// The accounts of `edgectl plan`: which account each object resolves to, decided as the operator
// decides it (runtime/accounts/resolve.ts) from the account objects listed from the cluster and
// those of the files; and a read-only client for each, from the key edgectl was given (the
// installation's) or from the account's key Secret, read with the caller's own Kubernetes rights.
import { createClient, type EdgeClient } from '../api/client.ts';
import { PreviewForbidden, type PreviewSecrets } from './preview-cache.ts';
import type { AccountKind, AccountRef, AccountSpec } from './runtime/accounts/kinds.ts';
import {
  type AccountFacts,
  describeAccount,
  effectiveAccount,
  forgedAccount,
  holdingAccount,
  INSTALLATION,
  mayAdopt,
  mayHold,
  mayUse,
  type Resolution,
  resolveAccount,
} from './runtime/accounts/resolve.ts';
import type { Condition } from './runtime/bindings/conditions.ts';
import type { EngineAccounts } from './runtime/engine/index.ts';
import type { KubeObject } from './runtime/kube/kube.ts';
import { secretValue } from './runtime/kube/secrets.ts';

/** What the operator is configured with that decides accounts (its flags, which edgectl takes too). */
export interface InstallationSettings {
  enabled: boolean;
  /** --adopt-from */
  adoptFrom: string[];
  /** The operator's namespace (a ClusterEdgeAccount's key Secret by default; it may adopt). */
  namespace: string;
  /** --api-url: the default of an account's apiURL. */
  url?: string;
  /** The installation account's client, made when first needed; throws why there is none. */
  client(): EdgeClient;
  /** Requests a minute each account's client of the preview may send. */
  perMinute: number;
}

/** An account that cannot serve the preview, as its objects would be told. */
export interface AccountRefusal {
  action: 'refuse' | 'error';
  reason?: string;
  message: string;
}

const API_KEY = /^[!-~]+$/;

export class PreviewAccounts {
  private readonly o: {
    installation: InstallationSettings;
    /** EdgeAccounts (live, the files' over them) by `namespace/name`, ClusterEdgeAccounts by name. */
    edge: Map<string, KubeObject>;
    cluster: Map<string, KubeObject>;
    namespaceLabels: Map<string, Record<string, string> | undefined>;
    secrets: PreviewSecrets;
  };
  private readonly clients = new Map<string, EdgeClient | AccountRefusal>();

  readonly facts: AccountFacts;

  constructor(o: PreviewAccounts['o']) {
    this.o = o;
    this.facts = {
      installationEnabled: o.installation.enabled,
      installationAdoptFrom: o.installation.adoptFrom,
      operatorNamespace: o.installation.namespace,
      edgeAccountExists: (ns, name) => o.edge.has(`${ns}/${name}`),
      clusterAccount: (name) => o.cluster.get(name)?.spec as AccountSpec | undefined,
      namespaceLabels: (ns) => o.namespaceLabels.get(ns),
    };
  }

  private get installation(): InstallationSettings {
    return this.o.installation;
  }

  /** The account the object works with (held or resolved), or why none: as the operator says it. */
  accountOf = (obj: KubeObject): Resolution => {
    const ns = obj.metadata.namespace ?? '';
    const ref = (obj.spec as { accountRef?: AccountRef } | undefined)?.accountRef;
    return effectiveAccount(
      (obj.status ?? {}) as { id?: string; account?: string },
      resolveAccount(ns, ref, this.facts),
      (id) => this.mayHold(obj, id),
    );
  };

  /** The account a delete goes to: the one holding the resource, else the resolved one. */
  forDelete(obj: KubeObject): Resolution {
    const ns = obj.metadata.namespace ?? '';
    const held = holdingAccount((obj.status ?? {}) as { id?: string; account?: string }, ns, (id) =>
      this.mayHold(obj, id),
    );
    return held ? { ok: true, id: held } : this.accountOf(obj);
  }

  mayAdopt = (id: string, namespace: string) => mayAdopt(id, namespace, this.facts);

  /** Whether the object's status may name the account (resolve.ts mayHold). */
  mayHold = (obj: KubeObject, id: string) =>
    mayHold(
      id,
      obj.metadata.namespace ?? '',
      (obj.spec as { accountRef?: AccountRef } | undefined)?.accountRef,
      this.facts,
    );

  /** A `status.account` the object's namespace may not use: not the operator's writing (the engine ignores it). */
  forged(obj: KubeObject): string | undefined {
    return forgedAccount((obj.status ?? {}) as { account?: string }, (id) => this.mayHold(obj, id));
  }

  /** What the engine asks of accounts while it resolves what an object wants (no client: see `client`). */
  engineAccounts(): EngineAccounts {
    return {
      accountOf: this.accountOf,
      mayUse: (id, ns) => mayUse(id, ns, this.facts),
      mayHold: this.mayHold,
      mayAdopt: this.mayAdopt,
      use: () => {
        throw new Error('preview: the engine asked for an account client');
      },
    };
  }

  /** The account's client (one for all its objects), or why its objects cannot be planned. */
  async client(id: string): Promise<EdgeClient | AccountRefusal> {
    let c = this.clients.get(id);
    if (!c) {
      c = await this.connect(id).catch(
        (err): AccountRefusal => ({ action: 'error', message: (err as Error).message }),
      );
      this.clients.set(id, c);
    }
    return c;
  }

  private async connect(id: string): Promise<EdgeClient | AccountRefusal> {
    if (id === INSTALLATION) {
      try {
        return this.installation.client();
      } catch (err) {
        return { action: 'error', message: `${describeAccount(id)}: ${(err as Error).message}` };
      }
    }
    const [kind, a, b] = id.split('/') as [AccountKind, string, string | undefined];
    const account = kind === 'EdgeAccount' ? this.o.edge.get(`${a}/${b}`) : this.o.cluster.get(a);
    if (!account)
      return { action: 'refuse', reason: 'WaitingForAccount', message: `${describeAccount(id)} not found` };
    const who = describeAccount(id);
    const stalled = ((account.status?.conditions ?? []) as Condition[]).find(
      (c) => c.type === 'Stalled' && c.status === 'True',
    );
    if (stalled) return { action: 'refuse', reason: stalled.reason, message: `${who}: ${stalled.message}` };
    const spec = account.spec as unknown as AccountSpec;
    const url = (account.status?.url as string | undefined) ?? spec.apiURL ?? this.installation.url;
    if (!url)
      return {
        action: 'refuse',
        reason: 'APIURLNotAllowed',
        message: `${who}: no spec.apiURL, and no --api-url to default to`,
      };
    const ns = kind === 'EdgeAccount' ? a : (spec.apiKeySecretRef.namespace ?? this.installation.namespace);
    const key = await this.key(who, ns, spec.apiKeySecretRef);
    if (typeof key !== 'string') return key;
    const perMinute = Math.min(this.installation.perMinute, spec.rateLimitPerMinute ?? Infinity);
    return createClient({ baseUrl: url, apiKey: key, rateLimitPerMinute: perMinute });
  }

  /** The account's key, read with the caller's rights, or the refusal the operator would give. */
  private async key(who: string, ns: string, ref: { name: string; key: string }) {
    const where = `Secret ${ns}/${ref.name}, key ${ref.key}`;
    let secret: KubeObject | undefined;
    try {
      secret = await this.o.secrets.secret(ns, ref.name);
    } catch (err) {
      if (!(err instanceof PreviewForbidden)) throw err;
      return {
        action: 'refuse' as const,
        reason: 'KeySecretForbidden',
        message: `${who}: ${where}: you may not read it (edgectl plan reads an account's key with your own Kubernetes rights)`,
      };
    }
    const data = secretValue(secret, ref.key);
    if (data === undefined)
      return {
        action: 'refuse' as const,
        reason: 'KeySecretNotFound',
        message: `${who}: ${secret ? `${where}: no such key` : `${where}: Secret not found`}`,
      };
    const key = Buffer.from(data, 'base64')
      .toString('utf8')
      .replace(/\r?\n$/, '');
    if (!API_KEY.test(key))
      return {
        action: 'refuse' as const,
        reason: 'KeyInvalid',
        message: `${who}: ${where}: not printable ASCII without spaces (the key is not shown)`,
      };
    return key;
  }

  async close(): Promise<void> {
    for (const c of this.clients.values()) if ('close' in c) await c.close().catch(() => {});
  }
}
