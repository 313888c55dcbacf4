// GET-by-id throughput and latency: the emulator vs a bare node:http JSON server, same
// machine, same run, same load generator. Loopback only; bounded in time.
// Usage: npm run bench:emulator [-- --seconds 5 --concurrency 64]
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { machine } from './report.ts';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '5' }, concurrency: { type: 'string', default: '64' } },
});
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const ROOT = join(import.meta.dirname, '../..');
const OUT = join(import.meta.dirname, 'results');

const BARE = `
const http = require('node:http');
const body = JSON.stringify({ id: 'ipp_x', uri: 'http://127.0.0.1/ip_policies/ipp_x', created_at: '2026-01-01T00:00:00Z', description: 'bench', metadata: '' });
const s = http.createServer((req, res) => {
  if (req.headers.authorization !== 'Bearer emulator-key') { res.writeHead(401); return res.end(); }
  res.writeHead(200, { 'content-type': 'application/json' }); res.end(body);
}).listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + s.address().port));`;

function start(args: string[]): Promise<{ url: string; proc: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ url: m[1]!, proc });
    });
    proc.once('exit', (c) => reject(new Error(`server exited ${c}`)));
  });
}

async function load(url: string, path: string) {
  const pool = new Pool(url, { connections: CONCURRENCY });
  const headers = { authorization: 'Bearer emulator-key', 'service-version': '2' };
  const lat: number[] = [];
  let errors = 0;
  const warmupEnd = Date.now() + 1000;
  const end = warmupEnd + SECONDS * 1000;
  const worker = async () => {
    while (Date.now() < end) {
      const t = performance.now();
      try {
        const r = await pool.request({ method: 'GET', path, headers });
        await r.body.text();
        if (r.statusCode !== 200) errors++;
      } catch {
        errors++;
      }
      if (Date.now() > warmupEnd) lat.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  await pool.close();
  lat.sort((a, b) => a - b);
  const q = (p: number) => Number(lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!.toFixed(2));
  return {
    requests: lat.length,
    rps: Math.round(lat.length / SECONDS),
    p50_ms: q(0.5),
    p99_ms: q(0.99),
    errors,
  };
}

const emu = await start(['src/cli/edgectl.ts', 'emulator', '--port', '0']);
const created = await fetch(`${emu.url}/ip_policies`, {
  method: 'POST',
  headers: {
    authorization: 'Bearer emulator-key',
    'service-version': '2',
    'content-type': 'application/json',
  },
  body: JSON.stringify({ description: 'bench' }),
});
const { id } = (await created.json()) as { id: string };
const bare = await start(['-e', BARE]);
try {
  const emulator = await load(emu.url, `/ip_policies/${id}`);
  const baseline = await load(bare.url, '/ip_policies/ipp_x');
  const result = {
    date: new Date().toISOString(),
    machine: machine(),
    seconds: SECONDS,
    concurrency: CONCURRENCY,
    emulator,
    bare_node_http: baseline,
    emulator_vs_bare_rps: Number((emulator.rps / baseline.rps).toFixed(2)),
  };
  mkdirSync(OUT, { recursive: true });
  writeFileSync(join(OUT, 'emulator-throughput.json'), `${JSON.stringify(result, null, 2)}\n`);
  const md = [
    `GET-by-id, ${CONCURRENCY} concurrent requests, ${SECONDS} s after 1 s warm-up, ${result.machine.cpus} cores, Node ${process.version}, ${result.date.slice(0, 10)}`,
    '',
    '| server | requests/s | p50 ms | p99 ms | errors |',
    '|---|---|---|---|---|',
    `| emulator (Fastify: auth, version check, store, render) | ${emulator.rps} | ${emulator.p50_ms} | ${emulator.p99_ms} | ${emulator.errors} |`,
    `| bare node:http, fixed JSON | ${baseline.rps} | ${baseline.p50_ms} | ${baseline.p99_ms} | ${baseline.errors} |`,
    '',
    `Emulator / bare: ${result.emulator_vs_bare_rps}x requests per second.`,
    '',
  ].join('\n');
  writeFileSync(join(OUT, 'emulator-throughput.md'), md);
  process.stdout.write(md);
} finally {
  emu.proc.kill();
  bare.proc.kill();
}
