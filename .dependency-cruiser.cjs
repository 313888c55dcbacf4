// The rules of the architecture (docs/architecture.md), checked by `npm run check:architecture`
// in CI: layers import only downwards, the runtime knows no kind, the engine is reached through
// its facade, and nothing imports in a circle, type imports included.

/**
 * The runtime's rooms, lowest first: a room imports only rooms below it (and the runtime's own
 * files at its root: names, metrics, logging, which import no room).
 */
const ROOMS = ['scheduler', 'kube', 'bindings', 'state', 'accounts', 'engine', 'manager'];
const roomRules = ROOMS.slice(0, -1).map((room, i) => ({
  name: `${room}-imports-no-room-above`,
  severity: 'error',
  comment: `the runtime's rooms are floors: ${ROOMS.join(' < ')}`,
  from: { path: `^src/operator/runtime/${room}/` },
  to: { path: `^src/operator/runtime/(${ROOMS.slice(i + 1).join('|')})/` },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...roomRules,
    {
      name: 'runtime-floor-imports-no-room',
      severity: 'error',
      comment: "the files at the runtime's root (names, metrics, logging) are below every room",
      from: { path: '^src/operator/runtime/[^/]+[.]ts$' },
      to: { path: '^src/operator/runtime/[^/]+/' },
    },
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
