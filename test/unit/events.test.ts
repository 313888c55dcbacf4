// Events go out one at a time from a bounded queue (client-go's broadcaster does the same):
// a slow API server never blocks a reconcile, and past the bound Normal events are dropped
// before Warnings, which say what needs a person.
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { EventRecorder } from '../../src/operator/runtime/events.ts';
import type { KubeObject } from '../../src/operator/runtime/kube.ts';

it('sends one Event at a time, in order; past 1,000 waiting, Normal ones are dropped first', async () => {
  const sent: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let release!: () => void;
  let gate = new Promise<void>((r) => (release = r));
  const kube = {
    create: async (_r: unknown, _ns: unknown, body: Record<string, unknown>) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await gate;
      inFlight--;
      sent.push(`${body.type} ${body.reason}`);
      return body as KubeObject;
    },
  };
  const events = new EventRecorder(kube as never, pino({ level: 'silent' }), 'test', undefined, 0);
  const obj = (i: number): KubeObject => ({ kind: 'IPPolicy', metadata: { name: `p${i}`, uid: `u${i}` } });
  events.record(obj(0), 'Warning', 'ApiRejected', 'first');
  for (let i = 1; i <= 1000; i++) events.record(obj(i), 'Normal', 'Created', `created ${i}`);
  events.record(obj(1001), 'Warning', 'ApiRejected', 'last');
  release();
  gate = Promise.resolve();
  await new Promise((r) => setTimeout(r, 200));
  expect(maxInFlight).toBe(1);
  // the first (in flight when the queue filled) and the Warnings are kept, one Normal went
  expect(sent).toHaveLength(1001);
  expect(sent[0]).toBe('Warning ApiRejected');
  expect(sent.at(-1)).toBe('Warning ApiRejected');
  expect(sent.filter((s) => s === 'Normal Created')).toHaveLength(999);
});
