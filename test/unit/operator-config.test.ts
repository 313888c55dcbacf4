// Settings are checked before the operator touches anything: a bad value is one line naming
// the flag and exit 2, and no default pairs a real cluster with the throw-away emulator.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/io.ts';
import { runCli } from '../../src/cli/run-cli.ts';
import { parseBool, parseDuration, readConfig } from '../../src/operator/config.ts';
import { createLogger } from '../../src/operator/runtime/logging.ts';
import { capturedIO } from '../support/cli-io.ts';
import { scratchDir } from '../support/scratch.ts';

const io = capturedIO;

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
  apiTimeout: '10s',
};

describe('operator flags', () => {
  it.each([
    [{ apiRateLimit: 'banana' }, '--api-rate-limit: not a whole number: "banana"'],
    [{ apiRateLimit: '0' }, '--api-rate-limit: 0 is out of range'],
    [{ apiRateLimit: '-1' }, '--api-rate-limit: not a whole number: "-1"'],
    [{ apiRateLimit: 'Infinity' }, '--api-rate-limit: not a whole number'],
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
    [{ apiTimeout: '500ms' }, '--api-timeout: 500ms is out of range (1s to 5m)'],
    [{ apiTimeout: '10m' }, '--api-timeout: 10m is out of range (1s to 5m)'],
    [{ apiTimeout: '1e1s' }, '--api-timeout: not a duration'],
    [{ watchIdleTimeout: '4s' }, '--watch-idle-timeout: 4s is out of range (5s to 1h)'],
    [{ watchIdleTimeout: '0' }, '--watch-idle-timeout: 0 is out of range (5s to 1h)'],
    [{ watchIdleTimeout: '61m' }, '--watch-idle-timeout: 61m is out of range (5s to 1h)'],
    [{ watchIdleTimeout: 'never' }, '--watch-idle-timeout: not a duration: "never"'],
    [{ logLevel: 'loud' }, '--log-level: "loud" is not one of'],
    [{ logFormat: 'pretty' }, '--log-format: "pretty" is not one of auto, json, text'],
    [{ instance: 'Not A Label!' }, '--instance: "Not A Label!" is not a valid label value'],
    [
      { apiUrl: 'example.com' },
      '--api-url: "example.com" is not an http(s) URL without credentials, query or fragment',
    ],
    [
      { apiUrl: 'https://user:tok3n@api.example.com' },
      '--api-url: "https://***@api.example.com" is not an http(s) URL',
    ],
    [
      { apiUrl: 'https://api.example.com/?key=k' },
      '--api-url: "https://api.example.com/?key=k" is not an http(s) URL',
    ],
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
    expect(c.apiTimeoutMs).toBe(10_000);
    expect(readConfig({ ...base, sharedNamespaces: 'platform, shared' }).sharedNamespaces).toEqual([
      'platform',
      'shared',
    ]);
  });

  it('--default-account and --account-api-urls: checked like every flag, one line naming it and exit 2', async () => {
    expect(readConfig({ ...base }).defaultAccount).toBe(true);
    expect(readConfig({ ...base, defaultAccount: 'false' }).defaultAccount).toBe(false);
    expect(
      readConfig({ ...base, accountApiUrls: 'https://eu.api.example.com, https://us.api.example.com/' })
        .accountApiUrls,
    ).toEqual(['https://eu.api.example.com', 'https://us.api.example.com/']);
    const bool = await operator(['--default-account', 'nope', '--kubeconfig', kubeconfig]);
    expect(bool.code).toBe(EXIT.usage);
    expect(bool.err).toBe('error: --default-account: expected true or false (or yes/no, 1/0), got "nope"\n');
    for (const bad of ['ftp://x.example.com', 'https://u:p@x.example.com', 'x.example.com']) {
      const r = await operator([
        '--account-api-urls',
        `https://ok.example.com,${bad}`,
        '--kubeconfig',
        kubeconfig,
      ]);
      expect(r.code).toBe(EXIT.usage);
      // a password in the URL is not repeated to the pod's log
      const shown = bad.replace('u:p@', '***@');
      expect(r.err).toBe(
        `error: --account-api-urls: ${JSON.stringify(shown)} is not an http(s) URL without credentials, query or fragment\n`,
      );
    }
  });

  it('a bad flag is one line on stderr and exit 2, from the command line', async () => {
    const r = await operator(['--api-rate-limit', 'banana', '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toBe('error: --api-rate-limit: not a whole number: "banana" (digits only, e.g. 1)\n');
  });

  it('--watch-idle-timeout and EDGE_WATCH_IDLE_TIMEOUT: a bad value is one line and exit 2', async () => {
    const r = await operator(['--watch-idle-timeout', '1s', '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toBe('error: --watch-idle-timeout: 1s is out of range (5s to 1h)\n');
    const prev = process.env.EDGE_WATCH_IDLE_TIMEOUT;
    process.env.EDGE_WATCH_IDLE_TIMEOUT = '3 minutes';
    try {
      const e = await operator(['--kubeconfig', kubeconfig]);
      expect(e.code).toBe(EXIT.usage);
      expect(e.err).toBe(
        'error: --watch-idle-timeout: not a duration: "3 minutes" (plain decimal with a unit, e.g. 30s, 1.5m, 1h, 500ms; whole milliseconds)\n',
      );
    } finally {
      if (prev === undefined) delete process.env.EDGE_WATCH_IDLE_TIMEOUT;
      else process.env.EDGE_WATCH_IDLE_TIMEOUT = prev;
    }
  });
});

// Numbers are plain decimal: what Number() or a YAML parser would also take (1e1, 0x10, " 4",
// +4, Infinity) is a typo or a template rendering a float, and is refused naming the rule.
describe('numbers and durations are plain decimal', () => {
  type Case = [Record<string, string>, string];
  /** Each value of `key` refused with `message`. */
  const each =
    (key: string, message: string) =>
    (v: string): Case => [{ [key]: v }, message];
  const whole = (flag: string) => `${flag}: not a whole number:`;
  const duration = (flag: string) => `${flag}: not a duration:`;
  const refused: Case[] = [
    ...[
      '1e1',
      '0x10',
      ' 4',
      '4 ',
      '\t4',
      '4\n',
      '+4',
      '-0',
      '4.0',
      '.5',
      '4.',
      '0b11',
      '0o7',
      '1_000',
      'Infinity',
      '',
    ].map(each('concurrency', whole('--concurrency'))),
    ...['1e2', '0x78', ' 120', '120 ', '+120', '1.5', '120.0', 'NaN', '1e+06', '１２０'].map(
      each('apiRateLimit', whole('--api-rate-limit')),
    ),
    ...[
      '1e1s',
      '1e1',
      '0x10s',
      ' 10m',
      '10m ',
      '10 m',
      '+10m',
      '-10m',
      '.5h',
      '5.h',
      '10M',
      '10min',
      '1h30m',
      '10mm',
      '1.5ms',
      '0.0001s',
      'Infinitys',
      '',
    ].map(each('resyncPeriod', duration('--resync-period'))),
    ...[' 30s', '3e1s', '30s\n', '0x1e'].map(each('drainTimeout', duration('--drain-timeout'))),
    ...[' 0', '0 ', '6e1s', '-0'].map(each('agentMetricsInterval', duration('--agent-metrics-interval'))),
    ...[' 3m', '3m ', '3e1s', '-3m', '3 m', '1h30m'].map(
      each('watchIdleTimeout', duration('--watch-idle-timeout')),
    ),
    ...[
      ' 127.0.0.1:8080',
      '127.0.0.1:8080 ',
      '127.0.0.1:0x50',
      '127.0.0.1:8e3',
      '127.0.0.1: 80',
      ':+80',
      '127.0.0.1:-1',
      'host name:80',
    ].map(each('listen', '--listen:')),
    [{ probeListen: ':8081\n' }, '--probe-listen: ":8081\\n" is not host:port'],
  ];
  it.each(refused)('%o is refused: %s', (over, message) => {
    expect(() => readConfig({ ...base, ...over })).toThrow(message);
  });

  it.each([
    [{ concurrency: '1' }, { concurrency: 1 }],
    [{ concurrency: '64' }, { concurrency: 64 }],
    [{ concurrency: '08' }, { concurrency: 8 }],
    [{ apiRateLimit: '1000000' }, { apiRatePerMinute: 1_000_000 }],
    [{ resyncPeriod: '10s' }, { resyncMs: 10_000 }],
    [{ resyncPeriod: '1.5m' }, { resyncMs: 90_000 }],
    [{ resyncPeriod: '0.5h' }, { resyncMs: 1_800_000 }],
    [{ resyncPeriod: '24h' }, { resyncMs: 86_400_000 }],
    [{ resyncPeriod: '90' }, { resyncMs: 90_000 }],
    [{ resyncPeriod: '15000ms' }, { resyncMs: 15_000 }],
    [{ drainTimeout: '0' }, { drainMs: 0 }],
    [{ drainTimeout: '2.5s' }, { drainMs: 2500 }],
    [{ drainTimeout: '10m' }, { drainMs: 600_000 }],
    [{ agentMetricsInterval: '0s' }, { agentMetricsMs: 0 }],
    [{ agentMetricsInterval: '1500ms' }, { agentMetricsMs: 1500 }],
    [{}, { watchIdleMs: 180_000 }],
    [{ watchIdleTimeout: '5s' }, { watchIdleMs: 5000 }],
    [{ watchIdleTimeout: '90' }, { watchIdleMs: 90_000 }],
    [{ watchIdleTimeout: '1.5m' }, { watchIdleMs: 90_000 }],
    [{ watchIdleTimeout: '1h' }, { watchIdleMs: 3_600_000 }],
    [{ listen: '0.0.0.0:8080' }, { listen: '0.0.0.0:8080' }],
  ])('%o is accepted', (over, expected) => {
    expect(readConfig({ ...base, ...over })).toMatchObject(expected);
  });

  it('each refusal is one line naming the flag and the rule', () => {
    expect(() => readConfig({ ...base, concurrency: '1e1' })).toThrow(
      '--concurrency: not a whole number: "1e1" (digits only, e.g. 1)',
    );
    expect(() => readConfig({ ...base, resyncPeriod: ' 10m' })).toThrow(
      '--resync-period: not a duration: " 10m" (plain decimal with a unit, e.g. 30s, 1.5m, 1h, 500ms; whole milliseconds)',
    );
    // a value with a newline is shown escaped, never as a second line
    let message = '';
    try {
      readConfig({ ...base, concurrency: '4\nx' });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toBe('--concurrency: not a whole number: "4\\nx" (digits only, e.g. 1)');
  });

  it('in range once plain: out-of-range numbers still name the bounds', () => {
    expect(() => readConfig({ ...base, concurrency: '65' })).toThrow(
      '--concurrency: 65 is out of range (1 to 64)',
    );
    expect(() => readConfig({ ...base, concurrency: '0' })).toThrow(
      '--concurrency: 0 is out of range (1 to 64)',
    );
    expect(() => readConfig({ ...base, concurrency: '9'.repeat(400) })).toThrow('is out of range (1 to 64)');
    expect(() => readConfig({ ...base, resyncPeriod: '9'.repeat(400) })).toThrow(
      '--resync-period: not a duration',
    );
  });

  it('parseDuration (also edgectl sessions upgrade --timeout) has the same rule', () => {
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('1.25s')).toBe(1250);
    for (const bad of ['1e1s', ' 2m', '2m ', '0x10', '-1s', '2 m'])
      expect(() => parseDuration(bad), bad).toThrow();
  });
});

// The key is refused before anything starts, and the message never contains it.
describe('API key and cluster id', () => {
  const SECRET = 'sk_live_0123456789abcdef';
  const keyFile = (content: string) => {
    const f = join(scratchDir('key-'), 'api-key');
    writeFileSync(f, content);
    return f;
  };
  const refusal = (over: Record<string, string>) => {
    try {
      readConfig({ ...base, ...over });
    } catch (e) {
      return (e as Error).message;
    }
    throw new Error('accepted');
  };

  it.each([
    ['an embedded newline', `${SECRET}\nX-Injected: 1`],
    ['a trailing newline', `${SECRET}\n`],
    ['a carriage return', `${SECRET}\r`],
    ['a tab', `\t${SECRET}`],
    ['a NUL', `${SECRET}\u0000`],
    ['DEL', `${SECRET}\u007f`],
    ['an escape sequence', `\u001b[2J${SECRET}`],
  ])('--api-key with %s is refused without showing it', (_what, key) => {
    const m = refusal({ apiKey: key });
    expect(m).toBe(
      '--api-key (EDGE_API_KEY) contains a control character (such as a newline); a key is printable ASCII without spaces (the key is not shown)',
    );
    expect(m).not.toContain(SECRET.slice(3));
  });

  it.each([
    ['a space', `${SECRET} x`],
    ['a leading space', ` ${SECRET}`],
    ['a non-ASCII character', `${SECRET}é`],
    ['a non-breaking space', `${SECRET}\u00a0`],
  ])('--api-key with %s is refused without showing it', (_what, key) => {
    const m = refusal({ apiKey: key });
    expect(m).toMatch(/^--api-key \(EDGE_API_KEY\) contains a space or a non-ASCII character;/);
    expect(m).not.toContain(SECRET.slice(3));
  });

  it.each([
    ['an embedded newline', `${SECRET}\nmore\n`, 'control character'],
    ['two trailing newlines', `${SECRET}\n\n`, 'control character'],
    ['a trailing space before the newline', `${SECRET} \n`, 'space or a non-ASCII'],
    ['a leading newline', `\n${SECRET}`, 'control character'],
    ['a NUL', `${SECRET}\u0000\n`, 'control character'],
  ])('--api-key-file with %s is refused without showing the key', (_what, content, rule) => {
    const f = keyFile(content);
    const m = refusal({ apiKeyFile: f });
    expect(m).toMatch(new RegExp(`^--api-key-file: the key in ${f} contains a ${rule}`));
    expect(m).toContain('(the key is not shown)');
    expect(m.split('\n')).toHaveLength(1);
    expect(m).not.toContain(SECRET.slice(3));
  });

  it('--api-key-file: one trailing newline (LF or CRLF) is how files end and is dropped', () => {
    for (const content of [SECRET, `${SECRET}\n`, `${SECRET}\r\n`])
      expect(readConfig({ ...base, apiKeyFile: keyFile(content) }).apiKey).toBe(SECRET);
    expect(readConfig({ ...base, apiKey: SECRET }).apiKey).toBe(SECRET);
    // the flag or env var wins over the file, as before
    expect(readConfig({ ...base, apiKey: SECRET, apiKeyFile: keyFile('other') }).apiKey).toBe(SECRET);
  });

  it('--api-key-file that is empty or unreadable is one line naming the file', () => {
    for (const content of ['', '\n']) {
      const f = keyFile(content);
      expect(refusal({ apiKeyFile: f })).toBe(`--api-key-file: ${f} is empty`);
    }
    expect(refusal({ apiKeyFile: '/nonexistent/key' })).toBe(
      '--api-key-file: cannot read /nonexistent/key: ENOENT',
    );
  });

  it('a bad key is exit 2 from the command line, before any cluster is touched, and never printed', async () => {
    const r = await operator(['--api-key', `${SECRET}\n`, '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/^error: --api-key \(EDGE_API_KEY\) contains a control character/);
    expect(r.err).not.toContain(SECRET.slice(3));
  });

  it.each([
    ['x'.repeat(64), '--cluster-id: 64 characters, at most 63 are allowed'],
    ['x'.repeat(1000), '--cluster-id: 1000 characters, at most 63 are allowed'],
    [
      'prod\n',
      '--cluster-id: "prod\\n" may hold only printable ASCII without spaces (at most 63 characters)',
    ],
    ['prod eu', '--cluster-id: "prod eu" may hold only printable ASCII'],
    [' prod', '--cluster-id: " prod" may hold only printable ASCII'],
    ['prod ', '--cluster-id: "prod " may hold only printable ASCII'],
    ['prod\u0000', '--cluster-id: "prod\\u0000" may hold only printable ASCII'],
    ['prod\t1', '--cluster-id: "prod\\t1" may hold only printable ASCII'],
    ['prödl', '--cluster-id: "prödl" may hold only printable ASCII'],
  ])('--cluster-id %j is refused', (clusterId, message) => {
    expect(() => readConfig({ ...base, clusterId })).toThrow(message);
  });

  it.each([
    'x'.repeat(63),
    '2f7c3f7e-9b1a-4d2e-8f6a-3c2b1a0d9e8f',
    'prod-eu-1',
    'gke_project_europe-west1_prod',
    'arn:aws:eks:eu-west-1:123:cluster/prod',
    'a"b\\c{}',
  ])('--cluster-id %j is accepted', (clusterId) => {
    expect(readConfig({ ...base, clusterId }).clusterId).toBe(clusterId);
  });

  it('an empty --cluster-id means the default (uid of kube-system)', () => {
    expect(readConfig({ ...base, clusterId: '' }).clusterId).toBeUndefined();
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
