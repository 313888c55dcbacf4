// The owner marker lives in the remote resource's metadata field, beside the user's own
// metadata: it names the cluster (so two installs sharing an account never touch each
// other's resources) and the object's uid (so a create interrupted by a crash is found).
export interface Owner {
  cluster: string;
  uid: string;
  /** kind/namespace/name, for a person reading the remote resource. */
  object: string;
}

const KEY = 'edge.tunnel.dev/owner';

export function encodeMetadata(owner: Owner, user: string): string {
  return JSON.stringify({ [KEY]: owner, metadata: user });
}

export function decodeMetadata(raw: string | undefined): { owner?: Owner; user: string } {
  if (!raw) return { user: '' };
  try {
    const v = JSON.parse(raw) as Record<string, unknown>;
    const o = v?.[KEY] as Owner | undefined;
    if (o && typeof o.cluster === 'string' && typeof o.uid === 'string') {
      return { owner: o, user: typeof v.metadata === 'string' ? v.metadata : '' };
    }
  } catch {}
  return { user: raw };
}
