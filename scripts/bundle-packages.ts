// Records, for scanners (Syft, Trivy, Grype), the npm packages the bundle is made of: the image
// carries no node_modules, so a scanner finds no package in it. esbuild's metafile names every
// input file the bundle holds; each file under node_modules belongs to the package whose root
// is the directory after its last node_modules/ (@scope/name for a scoped one). That package's
// own package.json (name, version, licence, author, repository) is copied to
// <outdir>/node_modules/<the same path> (nested copies too: ajv/node_modules/fast-uri), the
// layout the scanners read package.json files from. Node never reads them: the bundle imports
// no package by name but testcontainers, which it only loads outside the image and which is
// not among them.
// Usage (in the checkout, where the bundle was built):
//   EDGE_BUNDLE_METAFILE=meta.json node scripts/bundle.ts out
//   node scripts/bundle-packages.ts meta.json out
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The package directories of the bundle's inputs (metafile paths, relative to the directory
 * esbuild ran in, which is where to read them from): node_modules/zod,
 * node_modules/@kubernetes/client-node, node_modules/ajv/node_modules/fast-uri.
 */
export function bundledPackages(metafile: { inputs: Record<string, unknown> }): string[] {
  const dirs = new Set<string>();
  for (const input of Object.keys(metafile.inputs)) {
    const m = /^(node_modules\/(?:.*\/node_modules\/)?(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m) dirs.add(m[1]!);
  }
  return [...dirs].sort();
}

if (import.meta.main) {
  const [metafile, outdir] = process.argv.slice(2);
  if (!metafile || !outdir) {
    process.stderr.write('usage: node scripts/bundle-packages.ts <metafile> <outdir>\n');
    process.exit(2);
  }
  const dirs = bundledPackages(JSON.parse(readFileSync(metafile, 'utf8')));
  rmSync(join(outdir, 'node_modules'), { recursive: true, force: true });
  for (const dir of dirs) {
    const manifest = readFileSync(join(dir, 'package.json'), 'utf8');
    const { name, version } = JSON.parse(manifest) as { name?: string; version?: string };
    if (!name || !version) throw new Error(`bundle-packages: ${dir}/package.json has no name or version`);
    mkdirSync(join(outdir, dir), { recursive: true });
    writeFileSync(join(outdir, dir, 'package.json'), manifest);
  }
  process.stdout.write(`bundle-packages: ${dirs.length} packages under ${join(outdir, 'node_modules')}\n`);
}
