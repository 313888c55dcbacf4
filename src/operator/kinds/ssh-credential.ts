import { z } from 'zod';
import { ACL_RULE_PATTERN, aclProblem, idRule, RULES } from '../../api/rules.ts';
import type { SSHCredential as Remote } from '../../api/schemas/credentials.ts';
import { crudApi, defineBinding } from '../runtime/binding.ts';
import { cel, doc, immutable, ruled } from './crd-schema.ts';

const Spec = z.object({
  publicKey: doc(
    immutable(ruled(RULES.sshPublicKey, 'publicKey'), 'publicKey'),
    'OpenSSH public key, e.g. "ssh-ed25519 AAAA... comment" (immutable)',
  ),
  acl: doc(
    cel(
      z
        .array(z.string().max(512).regex(new RegExp(ACL_RULE_PATTERN)))
        .max(100)
        .refine((acl) => !aclProblem(acl), 'the rule "*" must be the only rule'),
      {
        rule: "!self.exists(r, r == '*') || size(self) == 1",
        message: 'the rule "*" must be the only rule',
      },
    ),
    'bind rules (bind:<domain>, bind:*.<domain>, bind:<host:port>, bind:<key>=<value>) or the single rule "*"; empty: no restriction',
  ).optional(),
  ownerID: doc(
    immutable(ruled(idRule('user', 'bot'), 'ownerID'), 'ownerID'),
    'user or bot owning the credential (admins only; immutable)',
  ).optional(),
});
type Spec = z.infer<typeof Spec>;
type Desired = { public_key: string; acl: string[]; owner_id?: string };

export const SSHCredential = defineBinding<Spec, Remote, Desired>({
  kind: 'SSHCredential',
  plural: 'sshcredentials',
  shortNames: ['sshcr'],
  description: 'An SSH public key that may start tunnels, optionally limited by bind rules.',
  spec: Spec,
  status: z.object({ ownerID: z.string().optional() }),
  desired: (s) => ({
    public_key: s.publicKey.trim(),
    acl: s.acl ?? [],
    ...(s.ownerID ? { owner_id: s.ownerID } : {}),
  }),
  observe: (r) => ({ public_key: r.public_key, acl: r.acl, ...(r.owner_id ? { owner_id: r.owner_id } : {}) }),
  updatable: ['acl'],
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
  exportSpec: (r) => ({
    publicKey: r.public_key,
    ...(r.acl.length ? { acl: r.acl } : {}),
    ...(r.owner_id ? { ownerID: r.owner_id } : {}),
  }),
});
