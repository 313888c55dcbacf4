// The emulator refuses to lose data or to break: a corrupt data file stops start-up (or is
// repaired on request, keeping a copy), bad admin input is a 400, and every error a client
// can provoke, even below the router (Fastify's, Node's, the HTTP parser's), has the API's
// error body.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicErrorCode } from '../../src/emulator/error-codes.ts';
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

/** The API's error body for a status and a descriptive code (its public number where it has one). */
const errorOf = (status: number, code: string) => ({
  error_code: publicErrorCode(code),
  status_code: status,
  msg: expect.any(String),
  details: { operation_id: expect.stringMatching(/^op_/), code },
});

/** One raw HTTP exchange on its own connection, for what fetch would never send. */
function rawHttp(url: string, text: string): Promise<{ status: number; body: unknown }> {
  const { port, hostname } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), hostname, () => s.write(text));
    let out = '';
    s.on('data', (d) => {
      out += d;
    });
    s.on('end', () => {
      const body = out.slice(out.indexOf('\r\n\r\n') + 4);
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1]),
        body: body ? JSON.parse(body) : undefined,
      });
    });
    s.on('error', reject);
  });
}

const record = (c: string, id: string) =>
  JSON.stringify({ c, id, rec: { id, created_at: '2024-05-01T10:00:00Z', description: id, metadata: '' } });

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

  it('a filter whose regular expression backtracks without end answers at once, and so does everyone else', async () => {
    const p = await h.client.ipPolicies.create({ description: `${'a'.repeat(40)}!` });
    try {
      const t0 = Date.now();
      const r = await call(
        'GET',
        `/ip_policies?filter=${encodeURIComponent('obj.description.matches("^(a+)+$")')}`,
      );
      expect(r.status).toBe(200);
      expect(((await r.json()) as { ip_policies: unknown[] }).ip_policies).toEqual([]);
      // a backtracking engine takes days on this; a linear one, microseconds
      expect(Date.now() - t0).toBeLessThan(5000);
    } finally {
      await h.client.ipPolicies.delete(p.id);
    }
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
    const bad = await rawHttp(h.emu.url, 'NOT HTTP AT ALL\r\n\r\n');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject(apiShape);
    const big = await rawHttp(
      h.emu.url,
      `GET /ip_policies HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(big.status).toBe(431);
    expect(big.body).toMatchObject({ ...apiShape, status_code: 431 });
  });

  it("answers every malformed request the framework refuses with the API's error body", async () => {
    const json = { 'content-type': 'application/json' };
    const cases: [
      string,
      string,
      string,
      Record<string, string>,
      string | Uint8Array | undefined,
      number,
      string,
    ][] = [
      [
        'malformed percent-encoding in an id',
        'GET',
        '/ip_policies/%',
        {},
        undefined,
        400,
        'ERR_INVALID_PATH',
      ],
      [
        'malformed percent-encoding in a path',
        'GET',
        '/ip_polic%zzies',
        {},
        undefined,
        400,
        'ERR_INVALID_PATH',
      ],
      ['... on an admin path', 'DELETE', '/_emulator/agents/%', {}, undefined, 400, 'ERR_INVALID_PATH'],
      [
        'a path segment too long',
        'GET',
        `/ip_policies/ipp_${'a'.repeat(200)}`,
        {},
        undefined,
        414,
        'ERR_URI_TOO_LONG',
      ],
      [
        'a text/plain body',
        'POST',
        '/ip_policies',
        { 'content-type': 'text/plain' },
        '{}',
        415,
        'ERR_UNSUPPORTED_MEDIA_TYPE',
      ],
      [
        'a body without a content type',
        'POST',
        '/ip_policies',
        {},
        new TextEncoder().encode('{}'),
        415,
        'ERR_MISSING_CONTENT_TYPE',
      ],
      [
        'a content type that does not parse',
        'POST',
        '/ip_policies',
        { 'content-type': ';;' },
        '{}',
        415,
        'ERR_UNSUPPORTED_MEDIA_TYPE',
      ],
      [
        'a form body',
        'POST',
        '/ip_policies',
        { 'content-type': 'application/x-www-form-urlencoded' },
        'a=1',
        415,
        'ERR_UNSUPPORTED_MEDIA_TYPE',
      ],
      [
        'a body over the limit',
        'POST',
        '/ip_policies',
        json,
        JSON.stringify({ metadata: 'x'.repeat(300_000) }),
        413,
        'ERR_BODY_TOO_LARGE',
      ],
      ['malformed JSON', 'POST', '/ip_policies', json, '{"description":', 400, 'ERR_INVALID_JSON'],
      ['a JSON body that is not an object', 'POST', '/ip_policies', json, '[1]', 400, 'ERR_INVALID_BODY'],
      ['an unknown path', 'GET', '/no/such/path', {}, undefined, 404, 'ERR_NO_SUCH_PATH'],
      ['an unknown admin path', 'GET', '/_emulator/nope', {}, undefined, 404, 'ERR_NO_SUCH_PATH'],
      [
        'a method the path does not have',
        'PUT',
        '/ip_policies',
        {},
        undefined,
        405,
        'ERR_METHOD_NOT_ALLOWED',
      ],
      ['a method no path has', 'PROPFIND', '/ip_policies', {}, undefined, 405, 'ERR_METHOD_NOT_ALLOWED'],
      [
        'malformed percent-encoding in a query value',
        'GET',
        '/ip_policies?limit=%zz',
        {},
        undefined,
        400,
        'ERR_INVALID_QUERY',
      ],
      [
        'malformed percent-encoding in a query name',
        'GET',
        '/ip_policies?%zz=1',
        {},
        undefined,
        400,
        'ERR_INVALID_QUERY',
      ],
      [
        'a query parameter given twice',
        'GET',
        '/ip_policies?limit=1&limit=2',
        {},
        undefined,
        400,
        'ERR_REPEATED_QUERY_PARAMETER',
      ],
      [
        'a bracketed query parameter',
        'GET',
        '/ip_policies?limit[]=1',
        {},
        undefined,
        400,
        'ERR_UNKNOWN_QUERY_PARAMETER',
      ],
    ];
    for (const [what, method, path, headers, body, status, code] of cases) {
      const res = await fetch(`${h.emu.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${h.emu.apiKey}`, 'service-version': '2', ...headers },
        body,
      });
      const text = await res.text();
      expect(res.status, what).toBe(status);
      expect(res.headers.get('content-type'), what).toMatch(/^application\/json/);
      expect(JSON.parse(text), what).toMatchObject(errorOf(status, code));
    }
  });

  it("answers what Node itself would refuse (no Host, an unmet Expect, CONNECT) with the API's error body", async () => {
    const auth = `authorization: Bearer ${h.emu.apiKey}\r\nservice-version: 2\r\nconnection: close\r\n`;
    const cases: [string, string, number, string][] = [
      ['HTTP/1.1 without Host', `GET /ip_policies HTTP/1.1\r\n${auth}\r\n`, 400, 'ERR_BAD_REQUEST'],
      [
        'an Expect other than 100-continue',
        `GET /ip_policies HTTP/1.1\r\nhost: x\r\nexpect: later\r\n${auth}\r\n`,
        417,
        'ERR_EXPECTATION_FAILED',
      ],
      [
        'CONNECT',
        'CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n',
        405,
        'ERR_METHOD_NOT_ALLOWED',
      ],
      ['an unknown method', `BREW /ip_policies HTTP/1.1\r\nhost: x\r\n${auth}\r\n`, 400, 'ERR_BAD_REQUEST'],
    ];
    for (const [what, text, status, code] of cases) {
      const res = await rawHttp(h.emu.url, text);
      expect(res.status, what).toBe(status);
      expect(res.body, what).toMatchObject(errorOf(status, code));
    }
  });

  it("answers a request that arrives while it shuts down with 503 and the API's error body", async () => {
    const emu = await startEmulator({ faults: { latencyMs: 1500, pathPattern: '^/tunnels' } });
    const { port, hostname } = new URL(emu.url);
    const head = `host: x\r\nauthorization: Bearer ${emu.apiKey}\r\nservice-version: 2\r\n`;
    const s = connect(Number(port), hostname);
    let out = '';
    s.on('data', (d) => {
      out += d;
    });
    await new Promise((r) => s.once('connect', r));
    // a slow request keeps the connection busy while close() begins; the next one on it is refused
    s.write(`GET /tunnels HTTP/1.1\r\n${head}\r\n`);
    await new Promise((r) => setTimeout(r, 300));
    const closed = emu.close();
    await new Promise((r) => setTimeout(r, 100));
    s.write(`GET /ip_policies HTTP/1.1\r\n${head}\r\n`);
    await closed;
    await new Promise((r) => (s.readableEnded ? r(undefined) : s.once('end', r)));
    const second = out.slice(out.indexOf('HTTP/1.1', 1));
    expect(out).toMatch(/^HTTP\/1\.1 200/);
    expect(second).toMatch(/^HTTP\/1\.1 503/);
    expect(JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4))).toMatchObject(
      errorOf(503, 'ERR_SERVICE_UNAVAILABLE'),
    );
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
