// Events go out one at a time from a bounded queue (client-go's broadcaster does the same):
// a slow API server never blocks a reconcile, and past the bound Normal events are dropped
// before Warnings, which say what needs a person.
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { EventRecorder } from '../../src/operator/runtime/kube/events.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';

/** An API server that takes no Event until `release()`: each one sent is written down by `say`. */
function heldRecorder(say: (ns: string, body: Record<string, unknown>) => string) {
  const sent: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const kube = {
    create: async (_r: unknown, ns: string, body: Record<string, unknown>) => {
      await gate;
      sent.push(say(ns, body));
      return body as KubeObject;
    },
  };
  const events = new EventRecorder(kube as never, pino({ level: 'silent' }), 'test', undefined, 0);
  return { sent, events, release: () => release() };
}

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
  events.record(obj(0), 'Warning', 'APIRejected', 'first');
  for (let i = 1; i <= 1000; i++) events.record(obj(i), 'Normal', 'Created', `created ${i}`);
  events.record(obj(1001), 'Warning', 'APIRejected', 'last');
  release();
  gate = Promise.resolve();
  await new Promise((r) => setTimeout(r, 200));
  expect(maxInFlight).toBe(1);
  // the first (in flight when the queue filled) and the Warnings are kept, one Normal went
  expect(sent).toHaveLength(1001);
  expect(sent[0]).toBe('Warning APIRejected');
  expect(sent.at(-1)).toBe('Warning APIRejected');
  expect(sent.filter((s) => s === 'Normal Created')).toHaveLength(999);
});

it('a repeat within the window is dropped however many other Events came between; in order across both types', async () => {
  const sent: string[] = [];
  const kube = {
    create: async (_r: unknown, _ns: unknown, body: Record<string, unknown>) => {
      sent.push(`${body.type} ${body.message}`);
      return body as KubeObject;
    },
  };
  const events = new EventRecorder(kube as never, pino({ level: 'silent' }), 'test');
  const obj = (i: number): KubeObject => ({ kind: 'IPPolicy', metadata: { name: `p${i}`, uid: `u${i}` } });
  // more keys than are kept before pruning, sent as they come (the queue never fills)
  for (let i = 0; i < 25_000; i++) {
    events.record(obj(i), i % 3 ? 'Normal' : 'Warning', 'Created', `m${i}`);
    if (i % 500 === 0) await new Promise((r) => setImmediate(r));
  }
  events.record(obj(0), 'Warning', 'Created', 'm0');
  events.record(obj(12_345), 'Normal', 'Created', 'm12345');
  await new Promise((r) => setTimeout(r, 200));
  expect(sent).toHaveLength(25_000);
  expect(sent.map((s) => Number(s.split(' m')[1]))).toEqual([...Array(25_000).keys()]);
});

it('with only Warnings waiting past the bound, the oldest goes', async () => {
  const { sent, events, release } = heldRecorder((_ns, body) => String(body.message));
  const obj = (i: number): KubeObject => ({ kind: 'IPPolicy', metadata: { name: `p${i}`, uid: `u${i}` } });
  // the first goes out at once (in flight), then 1,001 wait: one too many
  for (let i = 0; i <= 1001; i++) events.record(obj(i), 'Warning', 'APIRejected', `w${i}`);
  release();
  await new Promise((r) => setTimeout(r, 200));
  expect(sent).toHaveLength(1001);
  expect(sent.slice(0, 3)).toEqual(['w0', 'w2', 'w3']);
  expect(sent.at(-1)).toBe('w1001');
});

it('namespaces take turns and share the bound: one namespace’s flood neither holds back nor drops another’s Events', async () => {
  const { sent, events, release } = heldRecorder((ns, body) => `${ns} ${body.type} ${body.message}`);
  const obj = (ns: string, i: number): KubeObject => ({
    kind: 'IPPolicy',
    metadata: { namespace: ns, name: `p${i}`, uid: `${ns}-u${i}` },
  });
  // a bulk apply in `bulk` fills the queue past its bound; `small`'s few Events come amid it
  for (let i = 0; i < 1500; i++) {
    events.record(obj('bulk', i), 'Normal', 'Created', `b${i}`);
    if (i % 500 === 250) events.record(obj('small', i), 'Normal', 'Created', `s${i}`);
  }
  events.record(obj('small', 9999), 'Warning', 'APIRejected', 's-warn');
  release();
  await new Promise((r) => setTimeout(r, 200));
  const small = sent.filter((s) => s.startsWith('small '));
  expect(small).toEqual([
    'small Normal s250',
    'small Normal s750',
    'small Normal s1250',
    'small Warning s-warn',
  ]);
  // in turn with the flood: all of them within the first few sent after the one in flight
  expect(sent.indexOf('small Warning s-warn')).toBeLessThan(10);
  // the bound held: 1,000 waiting and the one in flight; only the flood's oldest waiting went
  expect(sent).toHaveLength(1001);
  expect(sent.filter((s) => s.startsWith('bulk ')).at(-1)).toBe('bulk Normal b1499');
});
