// The Node edgectl runs on: package.json's engines (a unit test holds the two together). Plain
// code without imports, so that the entry (edgectl.ts) can ask before it loads anything an older
// Node would fail on with a stack trace (undici, at import, on Node 20).

export const NODE_REQUIRED = '22.19';

/** One line saying which Node edgectl needs, when `version` (process.versions.node) is older; else undefined. */
export function nodeTooOld(version: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const [needMajor = 0, needMinor = 0] = NODE_REQUIRED.split('.').map(Number);
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return undefined;
  return `edgectl needs Node ${NODE_REQUIRED} or newer (Node 24 LTS recommended); this is Node ${version}`;
}
