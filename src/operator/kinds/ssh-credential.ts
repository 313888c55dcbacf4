import { z } from 'zod';
import {
  type SSHCredential as Remote,
  SSHCredentialCreate,
  SSHCredentialUpdate,
} from '../../api/schemas/credentials.ts';
import { crudApi, defineBinding } from '../runtime/bindings/binding.ts';
import { doc } from './crd-schema.ts';
import { kindSpec } from './kind-spec.ts';

// Bounds (BODY_BUDGET): a key of 8,192 characters (an RSA-16384 key is 2.8K, the rest a
// comment), 49 KB in the worst case; 50 ACL rules of 260 characters ("bind:" and a
// host:port), 78 KB.
const fields = kindSpec(SSHCredentialCreate, SSHCredentialUpdate, {
  public_key: { max: 8192 },
  acl: { max: 50, itemMax: 260 },
});
type Spec = { publicKey: string; acl?: string[]; ownerID?: string };
type Desired = { public_key: string; acl: string[]; owner_id?: string };

export const SSHCredential = defineBinding<Spec, Remote, Desired>({
  kind: 'SSHCredential',
  plural: 'sshcredentials',
  shortNames: ['sshcr'],
  description: 'An SSH public key that may start tunnels, optionally limited by bind rules.',
  spec: fields.schema,
  status: z.object({
    ownerID: doc(z.string(), 'id of the user or bot owning the credential, as the API reports it').optional(),
  }),
  desired: (s) => ({
    public_key: s.publicKey.trim(),
    acl: s.acl ?? [],
    ...(s.ownerID ? { owner_id: s.ownerID } : {}),
  }),
  fromRemote: (r) => ({
    public_key: r.public_key,
    acl: r.acl,
    ...(r.owner_id ? { owner_id: r.owner_id } : {}),
  }),
  updatable: fields.updatable as (keyof Desired)[],
  // the key itself (type and base64), not its comment
  conflict: {
    key: (d) => d.public_key.trim().split(/\s+/).slice(0, 2).join(' '),
    what: 'the same public key',
  },
  api: {
    ...crudApi((c) => c.sshCredentials),
    // public_key and owner_id are creation-only: never sent on update
    update: (c, id, patch) =>
      c.sshCredentials.update(id, {
        description: patch.description,
        metadata: patch.metadata,
        acl: patch.acl,
      }),
  },
  statusOf: (r) => ({ ownerID: r.owner_id }),
  exportSpec: (r, x) => fields.fromWire(r, x),
});
