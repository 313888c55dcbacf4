// kstatus conditions: Ready, Reconciling, Stalled. Argo CD and Flux read these.
export interface Condition {
  type: 'Ready' | 'Reconciling' | 'Stalled' | 'Paused' | 'TunnelsOnline';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

export type Phase =
  | { state: 'ready'; reason: string; message: string }
  | { state: 'progressing'; reason: string; message: string }
  | { state: 'stalled'; reason: string; message: string };

/** The three conditions for a phase, keeping lastTransitionTime where the status did not change. */
export function conditionsFor(
  phase: Phase,
  generation: number | undefined,
  previous: Condition[] = [],
  now = new Date(),
): Condition[] {
  const t = now.toISOString().replace(/\.\d+Z$/, 'Z');
  const want: Omit<Condition, 'lastTransitionTime'>[] = [
    {
      type: 'Ready',
      status: phase.state === 'ready' ? 'True' : 'False',
      reason: phase.reason,
      message: phase.message,
      observedGeneration: generation,
    },
  ];
  if (phase.state === 'progressing') {
    want.push({
      type: 'Reconciling',
      status: 'True',
      reason: phase.reason,
      message: phase.message,
      observedGeneration: generation,
    });
  }
  if (phase.state === 'stalled') {
    want.push({
      type: 'Stalled',
      status: 'True',
      reason: phase.reason,
      message: phase.message,
      observedGeneration: generation,
    });
  }
  return [
    ...want.map((c) => {
      const old = previous.find((p) => p.type === c.type);
      return { ...c, lastTransitionTime: old && old.status === c.status ? old.lastTransitionTime : t };
    }),
    // kept as they are: written by the tunnels loop, not by a reconcile
    ...previous.filter((p) => p.type === 'TunnelsOnline'),
  ];
}

export const readyCondition = (conds: Condition[] | undefined) => conds?.find((c) => c.type === 'Ready');
export const findCondition = (conds: Condition[] | undefined, type: Condition['type']) =>
  conds?.find((c) => c.type === type);
