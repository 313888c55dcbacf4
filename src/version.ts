// The package version, in one place: `edgectl --version` and `edgectl version`, the User-Agent,
// the operator's start log and its build-info metric. The image's bundle has it inlined
// (esbuild define); from source and from tsc's output it is read from the package.json one
// level up.
import { createRequire } from 'node:module';

declare const EDGE_OPERATOR_VERSION: string | undefined;

export const VERSION: string =
  typeof EDGE_OPERATOR_VERSION === 'string'
    ? EDGE_OPERATOR_VERSION
    : (createRequire(import.meta.url)('../package.json') as { version: string }).version;
