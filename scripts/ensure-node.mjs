// Run by npm after `npm ci` / `npm install` (postinstall): plain JavaScript, so that any Node
// runs it. The project runs its TypeScript sources directly, which needs Node 22.19+. On an
// older Node (Debian's and many CI images' Node 20) it brings its own: the real Node binary
// from the npm package `node` (pinned below), installed once into the project's cache outside
// the checkout (like the test control plane's binaries, so `npm ci` does not fetch it again)
// and linked as node_modules/.bin/node, which npm puts first on PATH for every `npm run` script.
// So `npm start` and `npm test` run on Node 24 with nothing installed by hand. A newer Node
// is used as it is: nothing is downloaded or linked.
// Only for a checkout: the package installed from npm (`npm install -g edge-operator`, or as a
// dependency) runs dist/, not the sources, and its npm scripts are never run; there the script
// does nothing (an older Node gets one line from edgectl itself, not a download).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const PINNED = '24.21.0';
const [major, minor] = process.versions.node.split('.').map(Number);
if (major > 22 || (major === 22 && minor >= 19) || process.env.EDGE_NODE_SKIP === '1') process.exit(0);

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const checkout =
  existsSync(join(root, 'src', 'cli', 'edgectl.ts')) &&
  !root.split(sep).includes('node_modules') &&
  process.env.npm_config_global !== 'true';
if (!checkout) process.exit(0);
const cache =
  process.env.EDGE_OPERATOR_CACHE ??
  join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'edge-operator');
const prefix = join(cache, `node-${PINNED}`);
const binary = join(prefix, 'node_modules', 'node', 'bin', 'node');
const link = join(root, 'node_modules', '.bin', 'node');
const version = () => {
  try {
    return execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
};

if (version() !== `v${PINNED}`) {
  process.stderr.write(
    `edge-operator: this is Node ${process.versions.node} and the project needs 22.19+: installing Node ${PINNED} from the npm package node@${PINNED} into ${prefix} (once; npm scripts then run on it)\n`,
  );
  mkdirSync(prefix, { recursive: true });
  const npm = process.env.npm_execpath;
  const args = ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', '--loglevel=error'];
  // the npm running this script, so a machine with several npms uses the one the user called
  execFileSync(npm ? process.execPath : 'npm', [...(npm ? [npm] : []), ...args, `node@${PINNED}`], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, npm_config_global: 'false', npm_config_prefix: prefix },
  });
  if (version() !== `v${PINNED}`) {
    process.stderr.write(`edge-operator: Node ${PINNED} did not install into ${prefix}\n`);
    process.exit(1);
  }
}
mkdirSync(dirname(link), { recursive: true });
rmSync(link, { force: true });
symlinkSync(binary, link);
