// The emulator refuses to lose data or to break: a corrupt data file stops start-up (or is
// repaired on request, keeping a copy), bad admin input is a 400, and every error a client
// can provoke, even below the router, has the API's error body.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.ts';
import { scratchDir } from '../support/scratch.ts';
import { emulatorWithClient, type Harness } from './harness.ts';

const run = promisify(execFile);
const EDGECTL = join(import.meta.dirname, '../../src/cli/edgectl.ts');

async function edgectl(args: string[]): Promise<{ code: number; stderr: string; stdout: string }> {
  try {
    const r = await run(process.execPath, [EDGECTL, ...args], { timeout: 20_000 });
    return { code: 0, stderr: r.stderr, stdout: r.stdout };
  } catch (err) {
    const e = err as { code: number; stderr: string; stdout: string };
    return { code: e.code, stderr: e.stderr, stdout: e.stdout };
  }
}

const record = (c: string, id: string) => JSON.stringify({ c, id, rec: { id, description: id } });

describe('data file', () => {
  it('refuses to start on a corrupt record in the middle, names the line, and changes nothing', async () => {
    const file = join(scratchDir('emu-'), 'state.jsonl');
    const text = `${record('ipPolicies', 'ipp_1')}\n{"c":"ipPolicies",BROKEN\n${record('ipPolicies', 'ipp_2')}\n`;
    writeFileSync(file, text);
    await expect(startEmulator({ dataFile: file })).rejects.toThrow(/line 2 is not a valid record.*--repair/);
    expect(readFileSync(file, 'utf8')).toBe(text);
    const cli = await edgectl(['emulator', '--port', '0', '--data-file', file]);
    expect(cli.code).not.toBe(0);
    expect(cli.stderr.trim().split('\n')).toHaveLength(1);
    expect(cli.stderr).toContain('line 2');
  });

  it('--repair keeps every readable record, after the bad line too, and copies the original aside', async () => {
    const dir = scratchDir('emu-');
    const file = join(dir, 'state.jsonl');
    const text = `${record('ipPolicies', 'ipp_1')}\nnot json\n${record('ipPolicies', 'ipp_2')}\n`;
    writeFileSync(file, text);
    const emu = await startEmulator({ dataFile: file, repair: true });
    try {
      expect(emu.store.all('ipPolicies').map((r) => r.id)).toEqual(['ipp_1', 'ipp_2']);
      const backup = readdirSync(dir).find((f) => f.startsWith('state.jsonl.corrupt-'));
      expect(backup).toBeDefined();
      expect(readFileSync(join(dir, backup!), 'utf8')).toBe(text);
    } finally {
      await emu.close();
    }
  });

  it('drops only a torn last line (a write that was never answered)', async () => {
    const file = join(scratchDir('emu-'), 'state.jsonl');
    writeFileSync(file, `${record('ipPolicies', 'ipp_1')}\n{"c":"ipPol`);
    const emu = await startEmulator({ dataFile: file });
    expect(emu.store.all('ipPolicies').map((r) => r.id)).toEqual(['ipp_1']);
    await emu.close();
    expect(existsSync(file)).toBe(true);
  });
});

describe('requests', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await emulatorWithClient();
  });
  afterAll(async () => {
    await h.close();
  });
  const call = (method: string, path: string, body?: unknown, key = h.emu.apiKey) =>
    fetch(`${h.emu.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        'service-version': '2',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const apiShape = {
    error_code: expect.any(String),
    status_code: expect.any(Number),
    msg: expect.any(String),
    details: expect.any(Object),
  };

  it('decodes an id once: %25 is a missing resource, not a server error', async () => {
    const r = await call('GET', '/ip_policies/%25');
    expect(r.status).toBe(404);
    expect(await r.json()).toMatchObject(apiShape);
  });

  it('bounds the admin clock: a huge advance is refused and later creates still work', async () => {
    const r = await call('POST', '/_emulator/clock', { advanceMs: 1e300 });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ ...apiShape, msg: expect.stringContaining('advanceMs') });
    const p = await h.client.ipPolicies.create({ description: 'after the clock' });
    expect(new Date(p.created_at).getFullYear()).toBeLessThan(9999);
  });

  it('refuses a fault pathPattern that is not a regular expression and keeps the old config', async () => {
    const r = await call('PUT', '/_emulator/faults', { pathPattern: '([' });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ ...apiShape, msg: expect.stringContaining('pathPattern') });
    expect((await h.client.ipPolicies.create({})).id).toMatch(/^ipp_/);
    const faults = (await (await call('GET', '/_emulator/faults')).json()) as { pathPattern?: string };
    expect(faults.pathPattern).toBeUndefined();
  });

  it("answers the HTTP parser's own errors (bad request, huge headers) with the API's error body", async () => {
    const { port, hostname } = new URL(h.emu.url);
    const raw = (text: string) =>
      new Promise<string>((resolve, reject) => {
        const s = connect(Number(port), hostname, () => s.write(text));
        let out = '';
        s.on('data', (d) => {
          out += d;
        });
        s.on('end', () => resolve(out));
        s.on('error', reject);
      });
    const bad = await raw('NOT HTTP AT ALL\r\n\r\n');
    expect(bad).toMatch(/^HTTP\/1\.1 400/);
    expect(JSON.parse(bad.slice(bad.indexOf('\r\n\r\n') + 4))).toMatchObject(apiShape);
    const big = await raw(`GET /ip_policies HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(big).toMatch(/^HTTP\/1\.1 431/);
    expect(JSON.parse(big.slice(big.indexOf('\r\n\r\n') + 4))).toMatchObject({
      ...apiShape,
      status_code: 431,
    });
  });
});

describe('edgectl emulator flags', () => {
  it('a busy port is one line on stderr and exit 2', async () => {
    const emu = await startEmulator({});
    try {
      const cli = await edgectl(['emulator', '--port', new URL(emu.url).port]);
      expect(cli.code).toBe(2);
      expect(cli.stderr.trim()).toMatch(/^error: --host 127\.0\.0\.1 --port \d+: address already in use$/);
    } finally {
      await emu.close();
    }
  });
  it('a port that is not a number is refused naming the flag', async () => {
    const cli = await edgectl(['emulator', '--port', 'banana']);
    expect(cli.code).toBe(2);
    expect(cli.stderr.trim()).toBe('error: --port: "banana" is not a port number (0..65535)');
  });
});
