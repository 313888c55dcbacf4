// The npm packages the image's SBOM names: those whose files esbuild put in the bundle, found
// from its metafile by scripts/bundle-packages.ts (the containers suite checks the image's).
import { expect, it } from 'vitest';
import { bundledPackages } from '../../scripts/bundle-packages.ts';

it('finds each input file under node_modules its package, scoped and nested ones too', () => {
  const inputs = Object.fromEntries(
    [
      'src/cli/edgectl.ts',
      'node_modules/zod/v4/core/core.js',
      'node_modules/zod/v4/classic/schemas.js',
      'node_modules/@kubernetes/client-node/dist/config.js',
      'node_modules/ajv/dist/ajv.js',
      'node_modules/ajv/node_modules/fast-uri/index.js',
      'node_modules/tsyringe/node_modules/tslib/tslib.es6.js',
      'node_modules/@peculiar/asn1-schema/build/es2015/index.js',
      // a plugin's module (no file of a package) and a package.json read as JSON
      'undici-core:undici',
      'node_modules/undici/package.json',
    ].map((p) => [p, {}]),
  );
  expect(bundledPackages({ inputs })).toEqual([
    'node_modules/@kubernetes/client-node',
    'node_modules/@peculiar/asn1-schema',
    'node_modules/ajv',
    'node_modules/ajv/node_modules/fast-uri',
    'node_modules/tsyringe/node_modules/tslib',
    'node_modules/undici',
    'node_modules/zod',
  ]);
});
