// The rules of the architecture (docs/architecture.md), checked by `npm run check:architecture`
// in CI: layers import only downwards, the runtime knows no kind, the engine is reached through
// its facade, and nothing imports in a circle, type imports included.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'an import circle, type imports included: split the shared part into a file both import',
      from: {},
      to: { circular: true },
    },
    {
      name: 'runtime-knows-no-kind',
      severity: 'error',
      comment:
        'the runtime (informers, queue, engine, accounts) is the same for every kind: a kind is a binding in kinds/',
      from: { path: '^src/operator/runtime/' },
      to: { path: '^src/operator/kinds/' },
    },
    {
      name: 'engine-through-its-facade',
      severity: 'error',
      comment: 'outside the engine, import engine/index.ts: its other files are its own',
      from: { path: '^src/', pathNot: '^src/operator/runtime/engine/' },
      to: { path: '^src/operator/runtime/engine/', pathNot: '^src/operator/runtime/engine/index[.]ts$' },
    },
    {
      name: 'util-is-the-floor',
      severity: 'error',
      from: { path: '^src/util/' },
      to: { path: '^src/(api|emulator|operator|cli|localcluster)/' },
    },
    {
      name: 'api-below-its-users',
      severity: 'error',
      comment:
        'the typed client and the wire schemas serve the emulator, the operator and the CLI: they import none of them',
      from: { path: '^src/api/' },
      to: { path: '^src/(emulator|operator|cli|localcluster)/' },
    },
    {
      name: 'emulator-stands-alone',
      severity: 'error',
      from: { path: '^src/emulator/' },
      to: { path: '^src/(operator|cli|localcluster)/' },
    },
    {
      name: 'runtime-below-the-program',
      severity: 'error',
      comment: 'the runtime is wired by run.ts and the CLI, never the other way round',
      from: { path: '^src/operator/runtime/' },
      to: { path: '^src/(cli|emulator|localcluster)/|^src/operator/[^/]+[.]ts$|^src/operator/settings/' },
    },
    {
      name: 'kinds-below-the-program',
      severity: 'error',
      from: { path: '^src/operator/kinds/' },
      to: { path: '^src/(cli|emulator|localcluster)/|^src/operator/[^/]+[.]ts$|^src/operator/settings/' },
    },
    {
      name: 'cli-is-the-top',
      severity: 'error',
      comment: 'only the CLI imports the CLI',
      from: { pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    parser: 'swc',
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.mjs', '.js'] },
  },
};
