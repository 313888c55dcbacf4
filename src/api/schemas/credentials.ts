import { z } from 'zod';
import { aclProblem, RULES } from '../rules.ts';
import { checked, code, idOf, resourceIn, resourceOut } from './common.ts';

const Acl = z.array(z.string()).superRefine((acl, ctx) => {
  const problem = aclProblem(acl);
  if (problem) ctx.addIssue({ code: 'custom', message: problem, params: { error_code: 'ERR_INVALID_ACL' } });
});
const OwnerId = idOf('user', 'bot');

export const SSHCredential = z.object({
  ...resourceOut,
  public_key: z.string(),
  acl: z.array(z.string()),
  owner_id: z.string().optional(),
});
export const SSHCredentialCreate = z.strictObject({
  ...resourceIn,
  acl: Acl.optional(),
  public_key: checked(RULES.sshPublicKey),
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
