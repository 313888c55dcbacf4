// With --data-file, every acknowledged write survives kill -9 of the emulator process.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { collect, createClient } from '../../src/api/client.ts';
import { scratchDir } from '../support/scratch.ts';

const EDGECTL = join(import.meta.dirname, '../../src/cli/edgectl.ts');
let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill('SIGKILL');
});

function start(dataFile: string): Promise<{ url: string; proc: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [EDGECTL, 'emulator', '--port', '0', '--data-file', dataFile], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child = proc;
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve({ url: m[1]!, proc });
    });
    proc.once('exit', (code) => reject(new Error(`emulator exited ${code}: ${out}`)));
  });
}

it('loses no acknowledged write when killed with SIGKILL mid-stream', async () => {
  const dataFile = join(scratchDir('emu-'), 'state.jsonl');
  const first = await start(dataFile);
  const c1 = createClient({
    baseUrl: first.url,
    apiKey: 'emulator-key',
    rateLimitPerMinute: Infinity,
    retry: { maxAttempts: 1 },
  });
  const acked: string[] = [];
  const policy = await c1.ipPolicies.create({ description: 'durable' });
  acked.push(policy.id);
  // writes race the kill: whatever was answered must be there afterwards
  let killed = false;
  const writer = (async () => {
    for (let i = 0; !killed && i < 2000; i++) {
      try {
        const r = await c1.ipPolicyRules.create({
          ip_policy_id: policy.id,
          cidr: `10.${(i >> 8) & 255}.${i & 255}.0/24`,
          action: 'allow',
        });
        acked.push(r.id);
      } catch {
        break;
      }
    }
  })();
  await new Promise((r) => setTimeout(r, 400));
  first.proc.kill('SIGKILL');
  killed = true;
  await writer;
  await c1.close();
  expect(acked.length).toBeGreaterThan(10);

  const second = await start(dataFile);
  const c2 = createClient({ baseUrl: second.url, apiKey: 'emulator-key', rateLimitPerMinute: Infinity });
  const rules = new Set((await collect(c2.ipPolicyRules.list())).map((r) => r.id));
  const policies = new Set((await collect(c2.ipPolicies.list())).map((p) => p.id));
  for (const id of acked) expect(id.startsWith('ipp_') ? policies.has(id) : rules.has(id), id).toBe(true);
  await c2.close();
}, 60_000);
