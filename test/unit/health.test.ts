// Conditions as the engine writes them, judged by kstatus's rules (what Flux uses) and by
// the Argo CD health check shipped with the chart, run in real Lua. They must agree.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LuaFactory } from 'wasmoon';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { conditionsFor, type Phase } from '../../src/operator/runtime/bindings/conditions.ts';

type Obj = {
  metadata: { generation: number };
  status?: { observedGeneration?: number; conditions?: { type: string; status: string; message?: string }[] };
};

/** kstatus (sigs.k8s.io/cli-utils/pkg/kstatus) for custom resources with standard conditions. */
function kstatus(o: Obj): 'Current' | 'InProgress' | 'Failed' {
  const s = o.status;
  if (!s) return 'InProgress';
  if (s.observedGeneration !== undefined && s.observedGeneration !== o.metadata.generation)
    return 'InProgress';
  const cond = (t: string) => s.conditions?.find((c) => c.type === t)?.status === 'True';
  if (cond('Reconciling')) return 'InProgress';
  if (cond('Stalled')) return 'Failed';
  return 'Current';
}

const phases: [string, Phase][] = [
  ['ready', { state: 'ready', reason: 'Synced', message: 'in sync' }],
  [
    'waiting for a reference',
    { state: 'progressing', reason: 'WaitingForReference', message: 'waiting for IPPolicy corp' },
  ],
  ['API unavailable', { state: 'progressing', reason: 'APIUnavailable', message: 'HTTP 503' }],
  ['rejected by the API', { state: 'stalled', reason: 'APIRejected', message: 'cidr: invalid' }],
];

describe('health for GitOps', async () => {
  const factory = new LuaFactory();
  const script = readFileSync(
    join(import.meta.dirname, '../../helm/edge-operator/argocd-health.lua'),
    'utf8',
  );
  const argo = async (o: Obj) => {
    // a fresh engine each time, with plain Lua tables as Argo CD hands the script
    const lua = await factory.createEngine({ enableProxy: false });
    try {
      lua.global.set('obj', structuredClone(o));
      return (await lua.doString(script)) as { status: string; message: string };
    } finally {
      lua.global.close();
    }
  };
  const ARGO = { Current: 'Healthy', InProgress: 'Progressing', Failed: 'Degraded' } as const;

  it.each(BINDINGS.flatMap((b) => phases.map(([name, p]) => [b.kind, name, p] as const)))(
    '%s %s',
    async (_kind, _name, phase) => {
      const o: Obj = {
        metadata: { generation: 3 },
        status: { observedGeneration: 3, conditions: conditionsFor(phase, 3) },
      };
      const expected = { ready: 'Current', progressing: 'InProgress', stalled: 'Failed' }[phase.state];
      expect(kstatus(o)).toBe(expected);
      const h = await argo(o);
      expect(h.status).toBe(ARGO[kstatus(o)]);
      expect(h.message).toBe(phase.message);
    },
  );

  it('a generation the operator has not observed yet is in progress, whatever Ready says', async () => {
    const o: Obj = {
      metadata: { generation: 4 },
      status: { observedGeneration: 3, conditions: conditionsFor(phases[0]![1], 3) },
    };
    expect(kstatus(o)).toBe('InProgress');
    expect((await argo(o)).status).toBe('Progressing');
    expect((await argo({ metadata: { generation: 1 } })).status).toBe('Progressing');
  });
});
