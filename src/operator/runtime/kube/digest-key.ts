// The key of the secret digests in status. Kept in a Secret of the operator's own
// namespace: readers of the custom resources cannot test guessed secret values against
// a digest whose key they do not have. Made once, shared by every replica and instance.
import { randomBytes } from 'node:crypto';
import { isConflict, isKubeNotFound, type Kube, type KubeObject } from './kube.ts';

const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
export const DIGEST_KEY_SECRET = 'edge-operator-digest-key';

export async function loadDigestKey(
  kube: Kube,
  namespace: string,
  name = DIGEST_KEY_SECRET,
): Promise<string> {
  const read = (s: KubeObject) => {
    const v = (s.data as Record<string, string> | undefined)?.key;
    if (!v) throw new Error(`Secret ${namespace}/${name} has no key "key": delete it to have a new one made`);
    return Buffer.from(v, 'base64').toString('utf8');
  };
  try {
    return read(await kube.get(SECRETS, namespace, name));
  } catch (err) {
    if (!isKubeNotFound(err)) throw err;
  }
  try {
    return read(
      await kube.create(SECRETS, namespace, {
        metadata: {
          name,
          namespace,
          labels: { 'app.kubernetes.io/managed-by': 'edge-operator' },
          annotations: {
            'edge.tunnel.dev/purpose':
              'HMAC key of status.secretDigests; replacing it makes the operator re-apply secret-bearing modules once',
          },
        },
        type: 'Opaque',
        data: { key: Buffer.from(randomBytes(32).toString('base64url')).toString('base64') },
      }),
    );
  } catch (err) {
    // another replica made it first
    if (isConflict(err)) return read(await kube.get(SECRETS, namespace, name));
    throw err;
  }
}
