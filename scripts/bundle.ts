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

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  entryPoints: { edgectl: join(root, 'src/cli/edgectl.ts') },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: `node${major}`,
  minifySyntax: true,
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
  plugins: [generatedApisAreUnused],
});
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
process.stdout.write(
  `bundle: ${outdir} (${(bytes / 1048576).toFixed(1)} MiB in ${Object.keys(result.metafile.outputs).length} files)\n`,
);
