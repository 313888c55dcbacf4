// Run by npm before `npm start`, `npm test` and friends: plain JavaScript, so that any
// Node can run it. The project runs TypeScript sources directly, which needs Node 22.19+
// (type stripping); an older Node would fail with a stack trace about ".ts" files.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `edge-operator needs Node 22.19 or newer (Node 24 LTS recommended); this is Node ${process.versions.node}. Run \`npm ci\` (without --ignore-scripts): it brings the project's own Node 24 for npm's scripts. Or install Node 24 and run the command again.\n`,
  );
  process.exit(1);
}
