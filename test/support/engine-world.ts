// The engine for every kind against the in-process emulator and a FakeKube: the
// reconciler's decisions (what it calls, what it writes, what it reports) without a
// control plane. Informer caches are the FakeKube's objects, read at reconcile time.
import { readdirSync, readFileSync } from 'node:fs';
import { pino } from 'pino';
import { parseAllDocuments } from 'yaml';
import { createClient, type EdgeClient } from '../../src/api/client.ts';
import { type Emulator, type EmulatorOptions, startEmulator } from '../../src/emulator/server.ts';
import { specSchema } from '../../src/operator/kinds/crd.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import type { Condition } from '../../src/operator/runtime/bindings/conditions.ts';
import { Engine, type EngineAccounts, type Outcome } from '../../src/operator/runtime/engine/index.ts';
import { EventRecorder } from '../../src/operator/runtime/kube/events.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { mergePatch } from '../../src/operator/runtime/kube/merge-patch.ts';
import { listedConflictKey } from '../../src/operator/runtime/state/conflicts.ts';
import { Observer } from '../../src/operator/runtime/state/observer.ts';
import { applyMergePatch, FakeKube } from './fake-kube.ts';
import { pluralOf } from './operator.ts';

export const NS = 'team';
export const CLUSTER = 'cluster-under-test';

export interface EngineWorld {
  emu: Emulator;
  api: EdgeClient;
  kube: FakeKube;
  /** Secrets by name: key -> plain value. */
  secrets: Map<string, Record<string, string>>;
  /** `ns`: another namespace than NS (a second tenant). */
  apply(
    kind: string,
    name: string,
    spec: Record<string, unknown>,
    annotations?: Record<string, string>,
    ns?: string,
  ): void;
  get(kind: string, name: string, ns?: string): KubeObject | undefined;
  reconcile(kind: string, name: string, ns?: string): Promise<Outcome>;
  /** The kind's idle work (id annotations), as the manager runs it when no queue has work. */
  recordIds(
    kind: string,
    busy?: () => boolean,
    opts?: { olderThanMs?: number; max?: number },
  ): Promise<number>;
  /** A bulk observation of every kind now (as at each resync period). */
  observe(kind?: string): Promise<void>;
  /** Reconciles every object until none has work left (references resolve in order). */
  converge(passes?: number): Promise<void>;
  ready(kind: string, name: string, ns?: string): Condition | undefined;
  /** What the kind's engine keeps for the object (undefined: nothing). */
  memo(kind: string, name: string, ns?: string): unknown;
  /** API calls since the last call, by "operation status". */
  calls(): Record<string, number>;
  close(): Promise<void>;
}

export async function engineWorld(
  opts: {
    emulator?: EmulatorOptions;
    resyncMs?: number;
    clusterId?: string;
    /** Each kind observed in bulk (a paged list), as the manager does. */
    bulk?: boolean;
    /** Accounts: each object uses its account's client (the world's `api` then serves none by itself). */
    accounts?: EngineAccounts;
  } = {},
): Promise<EngineWorld> {
  const emu = await startEmulator({ port: 0, ...opts.emulator });
  const api = createClient({
    baseUrl: emu.url,
    apiKey: emu.apiKey,
    rateLimitPerMinute: Infinity,
    retry: { maxAttempts: 1 },
  });
  const kube = new FakeKube();
  const secrets = new Map<string, Record<string, string>>();
  const log = pino({ level: 'silent' });
  const events = new EventRecorder(kube, log, 'engine-test', undefined, 0);
  const objects: { kind: string; name: string; ns: string }[] = [];
  const lookup = (kind: string, ns: string, name: string) => kube.get(pluralOf(kind), ns, name);
  /** The objects whose status holds a remote id, in any namespace (the manager's id index). */
  const holdersOf = (id: string) =>
    BINDINGS.flatMap((b) =>
      kube
        .all(b.plural)
        .filter((o) => (o.status as { id?: string } | undefined)?.id === id)
        .map((o) => ({ kind: b.kind, namespace: o.metadata.namespace!, name: o.metadata.name })),
    );
  const observers = new Map(
    BINDINGS.map((b) => [
      b.kind,
      new Observer({
        kind: b.kind,
        list: (onPage, onMalformed) => b.api.list(api, {}, { priority: 'low', onPage, onMalformed }),
        conflictKey: listedConflictKey(b),
        log,
      }),
    ]),
  );
  const engines = new Map(
    BINDINGS.map((binding) => [
      binding.kind,
      new Engine({
        binding,
        observer: opts.bulk ? observers.get(binding.kind) : undefined,
        kube,
        api,
        accounts: opts.accounts,
        events,
        log,
        clusterId: opts.clusterId ?? CLUSTER,
        digestKey: 'engine-test-digest-key',
        resyncMs: opts.resyncMs ?? 600_000,
        secrets: {
          value: async (_ns, name, key) => {
            const s = secrets.get(name);
            if (!s) return null;
            return s[key] === undefined ? undefined : Buffer.from(s[key]).toString('base64');
          },
        },
        cache: {
          lookup,
          referencesOf: (kind, spec) => BINDINGS.find((b) => b.kind === kind)?.references?.(spec as never),
          // the objects of the namespace whose references name this one, as the manager's index
          referrersOf: (kind, ns, name) =>
            BINDINGS.flatMap((b) =>
              kube
                .all(b.plural)
                .filter(
                  (o) =>
                    o.metadata.namespace === ns &&
                    (b.references?.((o.spec ?? {}) as never) ?? []).some(
                      (r) => r.kind === kind && r.name === name,
                    ),
                )
                .map((o) => `${b.kind} ${o.metadata.name}`),
            ).sort(),
          // as ObjectCache.ownerState: in another namespace only the marker's uid counts
          ownerState: async (object, uid, asking) => {
            const [kind, ns, name] = object.split('/') as [string, string, string];
            const o = kube.get(pluralOf(kind), ns, name);
            return o && (ns === asking || o.metadata.uid === uid) ? 'live' : 'gone';
          },
          list: () => kube.all(binding.plural),
          // no change feed: every object is looked at each time
          changes: () => undefined,
          managerOf: (id) => holdersOf(id)[0],
          managedElsewhere: (id, ns) => holdersOf(id).find((o) => o.namespace !== ns),
          nameIds: (text, ns) =>
            text.replace(/\b[a-z]+_[A-Za-z0-9]{8,}\b/g, (id) => {
              const o = holdersOf(id).find((x) => x.namespace === ns);
              return o ? `${id} (${o.kind} ${o.namespace}/${o.name})` : id;
            }),
          get: (key) => {
            const [ns, name] = key.split('/') as [string, string];
            return kube.get(binding.plural, ns, name);
          },
        },
      }),
    ]),
  );
  let seen: Record<string, number> = {};
  const w: EngineWorld = {
    emu,
    api,
    kube,
    secrets,
    apply(kind, name, input, annotations, ns = NS) {
      // as admission would: the CRD schema's checks and defaults (CEL rules are the e2e
      // suite's) on the whole spec after the patch
      const schema = specSchema(BINDINGS.find((b) => b.kind === kind)!);
      const existing = kube.get(pluralOf(kind), ns, name);
      if (existing) {
        const whole = schema.parse(applyMergePatch(existing.spec, input)) as Record<string, unknown>;
        kube.editSpec(pluralOf(kind), ns, name, mergePatch(existing.spec ?? {}, whole));
        return;
      }
      const spec = schema.parse(input) as Record<string, unknown>;
      kube.add(pluralOf(kind), {
        apiVersion: 'edge.tunnel.dev/v1alpha1',
        kind,
        metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
        spec,
      });
      objects.push({ kind, name, ns });
    },
    get: (kind, name, ns = NS) => kube.get(pluralOf(kind), ns, name),
    reconcile: (kind, name, ns = NS) => engines.get(kind)!.reconcile(`${ns}/${name}`),
    memo: (kind, name, ns = NS) => engines.get(kind)!.memos.peek(`${ns}/${name}`),
    recordIds: (kind, busy = () => false, opts = {}) => engines.get(kind)!.recordIds(busy, opts),
    async observe(kind) {
      for (const [k, o] of observers) if (!kind || k === kind) await o.refresh();
    },
    async converge(passes = 6) {
      for (let i = 0; i < passes; i++) {
        let busy = false;
        for (const o of objects) {
          if (!w.get(o.kind, o.name, o.ns)) continue;
          const out = await w.reconcile(o.kind, o.name, o.ns);
          if (out.retry || out.requeueAfterMs) busy = true;
          if (w.ready(o.kind, o.name, o.ns)?.status !== 'True') busy = true;
        }
        if (!busy) return;
      }
    },
    ready: (kind, name, ns = NS) =>
      (w.get(kind, name, ns)?.status?.conditions as Condition[] | undefined)?.find((c) => c.type === 'Ready'),
    calls() {
      const now = emu.counters.snapshot();
      const diff: Record<string, number> = {};
      for (const [k, v] of Object.entries(now)) if (v - (seen[k] ?? 0) > 0) diff[k] = v - (seen[k] ?? 0);
      seen = now;
      return diff;
    },
    async close() {
      await api.close();
      await emu.close();
    },
  };
  return w;
}

/** deploy/examples as the engine world's objects (Secrets into its Secret map). */
export function applyExamples(w: EngineWorld, dir = 'deploy/examples'): { kind: string; name: string }[] {
  const applied: { kind: string; name: string }[] = [];
  for (const f of readdirSync(dir).sort()) {
    for (const doc of parseAllDocuments(readFileSync(`${dir}/${f}`, 'utf8'))) {
      const o = doc.toJS() as { kind: string; metadata: { name: string }; spec?: Record<string, unknown> };
      if (!o) continue;
      if (o.kind === 'Secret')
        w.secrets.set(o.metadata.name, (o as unknown as { stringData: Record<string, string> }).stringData);
      else if (BINDINGS.some((b) => b.kind === o.kind)) {
        w.apply(o.kind, o.metadata.name, o.spec ?? {});
        applied.push({ kind: o.kind, name: o.metadata.name });
      }
    }
  }
  return applied;
}
