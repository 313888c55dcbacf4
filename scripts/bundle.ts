// Bundles edgectl for the image: one entry file plus the chunks that are loaded only when used
// (the emulator and its server framework, the local control plane), so the image carries no
// node_modules and the operator loads only the code it runs.
// Usage: node scripts/bundle.ts [outdir]   (default: bundle/)
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
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

rmSync(outdir, { recursive: true, force: true });
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
  // the sources are ASCII (esbuild escapes the rest) and a third of their size. keepNames:
  // function and class names (error names, log fields) stay what the sources say.
  minify: true,
  keepNames: true,
  legalComments: 'linked',
  // only the local control plane's container path uses it, and never in the image
  external: ['testcontainers'],
  metafile: true,
  define: { EDGE_OPERATOR_VERSION: JSON.stringify(pkg.version) },
  // CommonJS dependencies call require() for Node's own modules: give the ES module one
  banner: {
    js: "import { createRequire as __edgeRequire } from 'node:module'; const require = __edgeRequire(import.meta.url);",
  },
  logLevel: 'warning',
  plugins: [generatedApisAreUnused, undiciDispatcherOnly],
});
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
process.stdout.write(
  `bundle: ${outdir} (${(bytes / 1048576).toFixed(1)} MiB in ${Object.keys(result.metafile.outputs).length} files)\n`,
);
