import { z } from 'zod';
import { LIST_RULES, RULES } from '../rules.ts';
import { checked, code, describe, idCoded, listChecked, resourceIn, resourceOut } from './common.ts';

const Acl = describe(
  listChecked(z.array(checked(RULES.aclRule)), LIST_RULES.loneStar),
  'bind rules (bind:<domain>, bind:*.<domain>, bind:<host:port>, bind:<key>=<value>) or the single rule "*"; empty: no restriction',
);
const OwnerId = describe(
  idCoded('ERR_INVALID_OWNER_ID', 'user', 'bot'),
  'user or bot owning the credential (admins only)',
);

export const SSHCredential = z.object({
  ...resourceOut,
  public_key: z.string(),
  acl: z.array(z.string()),
  owner_id: z.string().optional(),
});
export const SSHCredentialCreate = z.strictObject({
  ...resourceIn,
  acl: Acl.optional(),
  public_key: describe(checked(RULES.sshPublicKey), 'OpenSSH public key, e.g. "ssh-ed25519 AAAA... comment"'),
  owner_id: OwnerId.optional(),
});
export const SSHCredentialUpdate = z.strictObject({ ...resourceIn, acl: Acl.optional() });

/** Not in the spec's tables; PEM CAs that a TLS edge's mutual TLS module points at. */
export const CertificateAuthority = z.object({
  ...resourceOut,
  ca_pem: z.string(),
  subject_common_name: z.string().optional(),
});
export const CertificateAuthorityCreate = z.strictObject({
  ...resourceIn,
  ca_pem: z.string().startsWith('-----BEGIN CERTIFICATE-----', {
    message: 'must be a PEM-encoded certificate',
    ...code('ERR_INVALID_PEM'),
  }),
});
export const CertificateAuthorityUpdate = z.strictObject({ ...resourceIn });

export type SSHCredential = z.infer<typeof SSHCredential>;
export type CertificateAuthority = z.infer<typeof CertificateAuthority>;
