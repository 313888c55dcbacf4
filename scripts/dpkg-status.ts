// Records, for scanners (Syft, Trivy, Grype), the Debian packages whose files the image carries:
// the image copies some of a package's files (the libraries Node links) and not dpkg's database,
// so this writes the database the way distroless images hold it: for each package owning a
// copied file, /var/lib/dpkg/status.d/<package> (its stanza from the build stage's dpkg,
// `dpkg-query -s`, version and all) and /var/lib/dpkg/status.d/<package>.md5sums (the files of
// it the image holds, at the paths the image holds them, each checked against the checksum
// dpkg recorded: a file that is not the package's, byte for byte, fails the build), and its
// copyright file under /usr/share/doc/<package>/ (the licence a scanner reports).
// Usage: node scripts/dpkg-status.ts <rootfs> <file>...   (files by their path in the image,
//   which is their path here; each already copied to <rootfs><file>)
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const [rootfs, ...files] = process.argv.slice(2);
if (!rootfs || files.length === 0) {
  process.stderr.write('usage: node scripts/dpkg-status.ts <rootfs> <file>...\n');
  process.exit(2);
}

const query = (...args: string[]) =>
  execFileSync('dpkg-query', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const md5 = (path: string) => createHash('md5').update(readFileSync(path)).digest('hex');

/**
 * The package (with its architecture, `libc6:amd64`) that registered the file: dpkg knows a
 * file by the path its package installed it at, which on a merged-/usr system may differ from
 * the one the loader names (/lib/x86_64-linux-gnu/libstdc++.so.6 is dpkg's
 * /usr/lib/x86_64-linux-gnu/libstdc++.so.6, a link to libstdc++.so.6.0.30).
 */
function owner(file: string): string {
  const tries = [file, join(realpathSync(dirname(file)), basename(file)), realpathSync(file)];
  for (const path of new Set(tries)) {
    let out: string;
    try {
      out = query('-S', path);
    } catch {
      continue;
    }
    for (const line of out.split('\n')) {
      const m = /^([^\s:,]+(?::[^\s:,]+)?): (.+)$/.exec(line);
      if (m && m[2] === path) return m[1]!;
    }
  }
  throw new Error(`dpkg-status: no package owns ${file} (tried ${[...new Set(tries)].join(', ')})`);
}

const byPackage = new Map<string, string[]>();
for (const file of files) {
  const pkg = owner(file);
  byPackage.set(pkg, [...(byPackage.get(pkg) ?? []), file]);
}

const statusDir = join(rootfs, 'var/lib/dpkg/status.d');
mkdirSync(statusDir, { recursive: true });
for (const [pkg, owned] of byPackage) {
  const name = pkg.split(':')[0]!;
  const stanza = query('-s', pkg).trimEnd();
  // dpkg's checksums of the package's files, by the file they resolve to here
  const recorded = new Map<string, string>();
  const sums = query('--control-path', pkg, 'md5sums').trim();
  for (const line of readFileSync(sums, 'utf8').split('\n')) {
    const m = /^([0-9a-f]{32}) {2}(.+)$/.exec(line);
    if (m && existsSync(`/${m[2]}`)) recorded.set(realpathSync(`/${m[2]}`), m[1]!);
  }
  const lines = owned.sort().map((file) => {
    const want = recorded.get(realpathSync(file));
    const have = md5(join(rootfs, file));
    if (want !== have)
      throw new Error(`dpkg-status: ${rootfs}${file} is not ${pkg}'s file (md5 ${have}, dpkg ${want})`);
    return `${have}  ${file.replace(/^\//, '')}`;
  });
  writeFileSync(join(statusDir, name), `${stanza}\n`);
  writeFileSync(join(statusDir, `${name}.md5sums`), `${lines.join('\n')}\n`);
  const copyright = `/usr/share/doc/${name}/copyright`;
  if (existsSync(copyright)) {
    mkdirSync(join(rootfs, dirname(copyright)), { recursive: true });
    writeFileSync(join(rootfs, copyright), readFileSync(copyright));
  }
  const version = /^Version: (.+)$/m.exec(stanza)?.[1];
  process.stdout.write(`dpkg-status: ${name} ${version}: ${owned.join(' ')}\n`);
}
