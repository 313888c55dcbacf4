// Run by npm before `npm start`, `npm test` and friends: plain JavaScript, so that any
// Node can run it. The project runs TypeScript sources directly, which needs Node 22.19+
// (type stripping); an older Node would fail with a stack trace about ".ts" files.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `edge-operator needs Node 22.19 or newer (Node 24 LTS recommended); this is Node ${process.versions.node}. Install Node 24 (for example: npm install --prefix ~/.node24 node@24, then put ~/.node24/node_modules/node/bin first on PATH) and run the command again.\n`,
  );
  process.exit(1);
}
