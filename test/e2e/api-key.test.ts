// A key the API refuses: the API's answer quotes the start of the key it got ("Your
// authentication: zq9X...."). The objects say the key was refused, as Stalled/APIUnauthorized
// with an Event, and no part of the key is in their status, their Events or the operator's log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDACTED } from '../../src/api/redact.ts';
import {
  condition,
  type OperatorProcess,
  obj,
  res,
  skipReason,
  startOperator,
  type World,
  waitFor,
  world,
} from './harness.ts';

const P = res('ippolicies');
const EVENTS = { group: '', version: 'v1', plural: 'events' };
// characters no message holds by chance
const WRONG = 'zq9Xw7Lm3pT2vK8r';
/** Runs of 4 of the key's characters found in the text. */
const keyParts = (text: string) =>
  Array.from({ length: WRONG.length - 3 }, (_, i) => WRONG.slice(i, i + 4)).filter((p) => text.includes(p));

describe.skipIf(!!skipReason)('a key the API refuses', () => {
  let w: World;
  let op: OperatorProcess;

  beforeAll(async () => {
    w = await world('apikey');
    op = await startOperator({ ...w.emu, apiKey: WRONG }, w.ns);
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('Stalled/APIUnauthorized with an Event; no part of the key in status, Events or logs', async () => {
    await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, 'office', {}));
    const o = await waitFor('office Stalled', async () => {
      const x = await w.kube.get(P, w.ns, 'office').catch(() => undefined);
      return condition(x, 'Stalled')?.status === 'True' ? x : undefined;
    });
    const stalled = condition(o, 'Stalled')!;
    expect(stalled.reason).toBe('APIUnauthorized');
    // what the API said, less the key it quoted
    expect(stalled.message).toContain(`Your authentication: ${REDACTED}.`);
    const event = await waitFor('an APIUnauthorized Event', async () =>
      ((await w.kube.list(EVENTS, w.ns)).items as unknown as { reason: string; message: string }[]).find(
        (e) => e.reason === 'APIUnauthorized',
      ),
    );
    expect(event.message).toContain(REDACTED);
    expect(keyParts(JSON.stringify(o.status))).toEqual([]);
    expect(keyParts(JSON.stringify((await w.kube.list(EVENTS, w.ns)).items))).toEqual([]);
    expect(keyParts(op.logs.join('\n'))).toEqual([]);
    // the emulator did quote it: without the redaction the text above would hold it
    const direct = await fetch(`${w.emu.url}/ip_policies`, {
      headers: { authorization: `Bearer ${WRONG}`, 'service-version': '2' },
    });
    expect(keyParts(await direct.text())).not.toEqual([]);
  });
});
