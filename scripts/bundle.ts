// Bundles edgectl for the image: one entry file plus the chunks that are loaded only when used
// (the emulator and its server framework, the local control plane), so the image carries no
// node_modules and the operator loads only the code it runs.
// Usage: node scripts/bundle.ts [outdir]   (default: bundle/)
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';

const root = resolve(import.meta.dirname, '..');
const outdir = resolve(process.argv[2] ?? join(root, 'bundle'));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
const major = readFileSync(join(root, '.nvmrc'), 'utf8').trim();

/**
 * @kubernetes/client-node's KubeConfig imports two names from the index of its generated API
 * clients, which re-exports hundreds of models; the package does not say its modules are free of
 * side effects, so esbuild would keep them all. They are (generated classes and re-exports):
 * saying so lets tree shaking keep only what KubeConfig uses.
 */
const generatedApisAreUnused: Plugin = {
  name: 'client-node-generated-apis-side-effect-free',
  setup(b) {
    b.onResolve({ filter: /^\./ }, async (args) => {
      if (args.pluginData === 'again' || !/@kubernetes[\\/]client-node[\\/]dist/.test(args.importer)) return;
      const r = await b.resolve(args.path, {
        importer: args.importer,
        kind: args.kind,
        resolveDir: args.resolveDir,
        pluginData: 'again',
      });
      return /client-node[\\/]dist[\\/]gen[\\/]/.test(r.path) ? { ...r, sideEffects: false } : r;
    });
  },
};

/** undici's own request(url, opts) wrapper, from its index (so it stays what undici ships). */
function makeDispatcher(dir: string): string {
  const code = /^function makeDispatcher \(fn\) \{$[\s\S]*?^\}$/m.exec(
    readFileSync(join(dir, 'index.js'), 'utf8'),
  );
  if (!code)
    throw new Error(
      `bundle: no makeDispatcher in ${dir}/index.js (an undici that builds request differently)`,
    );
  return code[0];
}

/**
 * undici's index loads all of it at once: fetch, WebSocket, the cache API, mocks, cookies,
 * and with them Node's HTTP/2, web streams and worker modules (18 MiB resident before a
 * request is made). The application and client-node's KubeConfig use only the dispatcher:
 * `request`, `Agent`, `ProxyAgent` (and the `Dispatcher` type). This module in its place
 * builds those from undici's own files, `request` as undici's index makes it; an import
 * of any other name fails the build (no matching export) instead of running without it.
 */
const undiciDispatcherOnly: Plugin = {
  name: 'undici-dispatcher-only',
  setup(b) {
    const dir = join(root, 'node_modules/undici');
    b.onResolve({ filter: /^undici$/ }, () => ({ path: 'undici', namespace: 'undici-core' }));
    b.onLoad({ filter: /.*/, namespace: 'undici-core' }, () => ({
      resolveDir: dir,
      loader: 'js',
      contents: `
import Dispatcher from './lib/dispatcher/dispatcher';
import api from './lib/api';
import util from './lib/core/util';
import errors from './lib/core/errors';
import { getGlobalDispatcher } from './lib/global';
import Agent from './lib/dispatcher/agent';
import ProxyAgent from './lib/dispatcher/proxy-agent';
const { InvalidArgumentError } = errors;
Object.assign(Dispatcher.prototype, api);
export { Agent, Dispatcher, ProxyAgent };
${makeDispatcher(dir)}
export const request = makeDispatcher(api.request);
// client-node's generated API clients import it; the bundle keeps only KubeConfig of them
export function fetch() {
  throw new Error('undici fetch is not in this bundle (scripts/bundle.ts: undici-dispatcher-only)');
}
`,
    }));
  },
};

/**
 * `import { z } from 'zod'` keeps zod's whole namespace, and with it `z.locales`: the error
 * messages of 50 languages (400 KiB the operator's process would hold as source text). The
 * application never calls `z.config(z.locales.xx())`; zod itself configures English from its own
 * module. Here `z.locales` holds English only.
 */
const zodEnglishOnly: Plugin = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /[\\/]locales[\\/]index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer)
        ? {
            path: 'zod-locales',
            namespace: 'zod-english-only',
            pluginData: dirname(resolve(args.resolveDir, args.path)),
          }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, (args) => ({
      resolveDir: args.pluginData as string,
      loader: 'js',
      contents: `export { default as en } from './en.js';`,
    }));
  },
};

/**
 * An ES module import of node:http has Node build its module facade, which reads every export,
 * and http's WebSocket, CloseEvent and MessageEvent getters load Node's own copy of undici (the
 * fetch and WebSocket implementation: 750 KiB of source kept resident, and its objects), which
 * the operator never uses. require() reads none: every import of http in the bundle goes so.
 */
const httpByRequire: Plugin = {
  name: 'http-by-require',
  setup(b) {
    b.onResolve({ filter: /^(node:)?http$/ }, (args) =>
      args.namespace === 'http-by-require'
        ? { path: 'node:http', external: true }
        : { path: 'http', namespace: 'http-by-require' },
    );
    b.onLoad({ filter: /.*/, namespace: 'http-by-require' }, () => ({
      loader: 'js',
      contents: `module.exports = require('node:http');`,
    }));
  },
};

/**
 * prom-client's index loads its cluster aggregator, Summary and Pushgateway (and with it
 * Node's zlib), which the operator never uses. This module in its place exports what the
 * application imports, from prom-client's own files; an import of any other name fails the
 * build. (Node's cluster, child_process and dgram modules load anyway: net's listen() asks
 * whether the process is a cluster worker; dns with the first connection by host name.)
 */
const promClientUsedOnly: Plugin = {
  name: 'prom-client-used-only',
  setup(b) {
    b.onResolve({ filter: /^prom-client$/ }, () => ({ path: 'prom-client', namespace: 'prom-client-used' }));
    b.onLoad({ filter: /.*/, namespace: 'prom-client-used' }, () => ({
      resolveDir: join(root, 'node_modules/prom-client'),
      loader: 'js',
      contents: `
export { default as Registry } from './lib/registry';
export { default as Counter } from './lib/counter';
export { default as Gauge } from './lib/gauge';
export { default as Histogram } from './lib/histogram';
export { default as collectDefaultMetrics } from './lib/defaultMetrics';
`,
    }));
  },
};

// the last build's files go (chunk names change with their contents); folders stay: the
// benchmarks run a previous commit's bundle from bundle/before/
if (existsSync(outdir))
  for (const f of readdirSync(outdir, { withFileTypes: true })) if (f.isFile()) rmSync(join(outdir, f.name));
const result = await build({
  entryPoints: { edgectl: join(root, 'src/cli/edgectl.ts') },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: `node${major}`,
  // V8 keeps every loaded module's source text for the life of the process, and a file with
  // one non-ASCII character (a comment's dash or quote) as two bytes per character: minified,
  // the sources are ASCII (esbuild escapes the rest) and a third of their size. Names are
  // not kept (keepNames): redefining the name of each of 3,700 functions cost 1.7 MiB at
  // start; the errors name themselves (`override name`), and a stack trace is minified anyway.
  minify: true,
  legalComments: 'linked',
  // only the local control plane's container path uses it, and never in the image
  external: ['testcontainers'],
  metafile: true,
  // esbuildDetection: undici's own switch for a bundle (Node's copy of undici is built so):
  // its experimental Milo parser (two WebAssembly builds, 150 KiB of source) stays out, and
  // the HTTP/1 parser is llhttp, as without it
  define: { EDGE_OPERATOR_VERSION: JSON.stringify(pkg.version), esbuildDetection: 'true' },
  // CommonJS dependencies call require() for Node's own modules: give the ES module one
  banner: {
    js: "import { createRequire as __edgeRequire } from 'node:module'; const require = __edgeRequire(import.meta.url);",
  },
  logLevel: 'warning',
  plugins: [generatedApisAreUnused, undiciDispatcherOnly, zodEnglishOnly, httpByRequire, promClientUsedOnly],
});
// what each chunk holds, for a look at what the operator's process loads (kept out of the image)
if (process.env.EDGE_BUNDLE_METAFILE)
  writeFileSync(process.env.EDGE_BUNDLE_METAFILE, JSON.stringify(result.metafile));
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
process.stdout.write(
  `bundle: ${outdir} (${(bytes / 1048576).toFixed(1)} MiB in ${Object.keys(result.metafile.outputs).length} files)\n`,
);
