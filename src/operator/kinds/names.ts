// How the API's snake_case names read in a CRD.

const ACRONYMS = new Set(['id', 'ids', 'url', 'tcp', 'tls', 'pem', 'ip']);
/** snake_case -> camelCase with the Kubernetes API conventions' acronyms (clientID, metadataURL). */
export function camel(wire: string): string {
  const [first, ...rest] = wire.split('_');
  return (
    first! +
    rest
      .map((w) =>
        ACRONYMS.has(w) ? (w === 'ids' ? 'IDs' : w.toUpperCase()) : w[0]!.toUpperCase() + w.slice(1),
      )
      .join('')
  );
}
