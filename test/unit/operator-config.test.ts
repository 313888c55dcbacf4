// Settings are checked before the operator touches anything: a bad value is one line naming
// the flag and exit 2, and no default pairs a real cluster with the throw-away emulator.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliIO, EXIT } from '../../src/cli/io.ts';
import { runCli } from '../../src/cli/run-cli.ts';
import { parseBool, readConfig } from '../../src/operator/config.ts';
import { createLogger } from '../../src/operator/runtime/logging.ts';
import { scratchDir } from '../support/scratch.ts';

function io(): CliIO & { errText: () => string } {
  let err = '';
  return {
    out: () => {},
    err: (s) => {
      err += s;
    },
    isTTY: false,
    env: {},
    sleep: async () => {},
    now: Date.now,
    errText: () => err,
  };
}

/** A kubeconfig for a cluster nobody can reach: refusals must come before any request. */
const kubeconfig = join(scratchDir('kc-'), 'config');
writeFileSync(
  kubeconfig,
  `apiVersion: v1
kind: Config
clusters: [{name: prod, cluster: {server: "https://prod.example.invalid:6443"}}]
users: [{name: admin, user: {token: t}}]
contexts: [{name: prod-admin, context: {cluster: prod, user: admin}}]
current-context: prod-admin
`,
);

async function operator(args: string[]): Promise<{ code: number; err: string }> {
  const i = io();
  const code = await runCli(['operator', '--listen', '127.0.0.1:0', ...args], i);
  return { code, err: i.errText() };
}

const base = {
  listen: '127.0.0.1:8080',
  namespaces: '',
  concurrency: '4',
  resyncPeriod: '10m',
  leaderElectionNamespace: 'default',
  apiRateLimit: '120',
  drainTimeout: '30s',
  logLevel: 'info',
  logFormat: 'auto',
  agentMetricsInterval: '60s',
};

describe('operator flags', () => {
  it.each([
    [{ apiRateLimit: 'banana' }, '--api-rate-limit: not a number: "banana"'],
    [{ apiRateLimit: '0' }, '--api-rate-limit: 0 is out of range'],
    [{ apiRateLimit: '-1' }, '--api-rate-limit: -1 is out of range'],
    [{ apiRateLimit: 'Infinity' }, '--api-rate-limit: not a number'],
    [{ resyncPeriod: '0' }, '--resync-period: 0 is out of range (10s to 24h)'],
    [{ resyncPeriod: '0s' }, '--resync-period: 0s is out of range'],
    [{ resyncPeriod: 'soon' }, '--resync-period: not a duration: "soon"'],
    [{ concurrency: '100000' }, '--concurrency: 100000 is out of range (1 to 64)'],
    [{ concurrency: '2.5' }, '--concurrency: not a whole number'],
    [{ leaderElect: 'maybe' }, '--leader-elect: expected true or false'],
    [{ emulator: 'sure' }, '--emulator: expected true or false'],
    [{ listen: 'notanaddress' }, '--listen: "notanaddress" is not host:port'],
    [{ listen: '127.0.0.1:99999' }, '--listen: "127.0.0.1:99999" is not host:port'],
    [{ probeListen: 'x' }, '--probe-listen: "x" is not host:port'],
    [{ drainTimeout: '1h' }, '--drain-timeout: 1h is out of range'],
    [{ logLevel: 'loud' }, '--log-level: "loud" is not one of'],
    [{ logFormat: 'pretty' }, '--log-format: "pretty" is not one of auto, json, text'],
    [{ instance: 'Not A Label!' }, '--instance: "Not A Label!" is not a valid label value'],
    [{ apiUrl: 'example.com' }, '--api-url: "example.com" is not an http(s) URL'],
    [{ apiUrl: 'https://api.example.com', emulator: 'true' }, '--emulator and --api-url exclude each other'],
  ])('%o is refused: %s', (over, message) => {
    expect(() => readConfig({ ...base, ...over })).toThrow(message);
  });

  it('parses booleans strictly, as people write them in env files', () => {
    for (const v of ['true', '1', 'yes', 'YES', 'on']) expect(parseBool('--x', v, false)).toBe(true);
    for (const v of ['false', '0', 'no', 'off']) expect(parseBool('--x', v, true)).toBe(false);
    expect(readConfig({ ...base, leaderElect: 'yes' }).leaderElect).toBe(true);
    expect(readConfig({ ...base }).leaderElect).toBeUndefined();
  });

  it('accepts what the chart and the README use', () => {
    const c = readConfig({ ...base, listen: ':8080', probeListen: '[::1]:8081', agentMetricsInterval: '0' });
    expect(c.agentMetricsMs).toBe(0);
    expect(c.resyncMs).toBe(600_000);
    expect(c.leaderElectionId).toBe('edge-operator');
    expect(readConfig({ ...base, instance: 'blue' }).leaderElectionId).toBe('edge-operator-blue');
  });

  it('a bad flag is one line on stderr and exit 2, from the command line', async () => {
    const r = await operator(['--api-rate-limit', 'banana', '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toBe('error: --api-rate-limit: not a number: "banana"\n');
  });
});

describe('ports', () => {
  let busy: Server;
  let port: number;
  beforeAll(async () => {
    busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    port = (busy.address() as { port: number }).port;
  });
  afterAll(() => {
    busy.close();
  });

  it('a busy --listen port is one line and exit 2, before any cluster or API is touched', async () => {
    const i = io();
    const code = await runCli(
      [
        'operator',
        '--listen',
        `127.0.0.1:${port}`,
        '--kubeconfig',
        kubeconfig,
        '--api-url',
        'https://api.example.invalid',
        '--api-key',
        'k',
      ],
      i,
    );
    expect(code).toBe(EXIT.usage);
    expect(i.errText()).toBe(`error: --listen 127.0.0.1:${port}: address already in use\n`);
  });

  it('a busy --probe-listen port names that flag', async () => {
    const i = io();
    const code = await runCli(
      [
        'operator',
        '--listen',
        '127.0.0.1:0',
        '--probe-listen',
        `127.0.0.1:${port}`,
        '--kubeconfig',
        kubeconfig,
      ],
      i,
    );
    expect(code).toBe(EXIT.usage);
    expect(i.errText()).toBe(`error: --probe-listen 127.0.0.1:${port}: address already in use\n`);
  });
});

describe('no throw-away API against a real cluster', () => {
  it('a kubeconfig without an API URL is refused, naming the cluster and what to set', async () => {
    const r = await operator(['--kubeconfig', kubeconfig]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toContain('https://prod.example.invalid:6443');
    expect(r.err).toContain('context prod-admin');
    expect(r.err).toMatch(/EDGE_API_URL.*--local.*--emulator/);
  });

  it('in a cluster without an API URL it refuses and names the chart value', async () => {
    const prev = process.env.KUBERNETES_SERVICE_HOST;
    process.env.KUBERNETES_SERVICE_HOST = '10.0.0.1';
    try {
      const r = await operator([]);
      expect(r.code).toBe(EXIT.usage);
      expect(r.err).toMatch(
        /^error: no Edge API URL: set EDGE_API_URL \(chart: api\.url\).*api\.emulator=true/,
      );
    } finally {
      if (prev === undefined) delete process.env.KUBERNETES_SERVICE_HOST;
      else process.env.KUBERNETES_SERVICE_HOST = prev;
    }
  });

  it('without any cluster it says to set KUBECONFIG or use --local', async () => {
    const prevHome = process.env.HOME;
    const prevKc = process.env.KUBECONFIG;
    process.env.HOME = scratchDir('home-');
    delete process.env.KUBECONFIG;
    try {
      const r = await operator(['--api-url', 'https://api.example.invalid', '--api-key', 'k']);
      expect(r.code).toBe(EXIT.usage);
      expect(r.err).toMatch(
        /no Kubernetes cluster configured: set KUBECONFIG or --kubeconfig, or use --local/,
      );
    } finally {
      process.env.HOME = prevHome;
      if (prevKc !== undefined) process.env.KUBECONFIG = prevKc;
    }
  });
});

describe('log format', () => {
  it('text is one readable line per entry, secrets still redacted', () => {
    const lines: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string) => lines.push(s) > 0) as typeof process.stdout.write;
    try {
      createLogger('info', 'text').info({ object: 'ns/corp', apiKey: 'k-123', note: 'two words' }, 'synced');
    } finally {
      process.stdout.write = write;
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}synced {2}object=ns\/corp apiKey=\[redacted\] note="two words"\n$/,
    );
  });
  it('auto picks JSON when the output is not a terminal', () => {
    expect(readConfig({ ...base }).logFormat).toBe(process.stdout.isTTY ? 'text' : 'json');
    expect(readConfig({ ...base, logFormat: 'text' }).logFormat).toBe('text');
  });
});
