import { z } from 'zod';
import { caPemProblem } from '../pem.ts';
import { LIST_RULES, RULES } from '../rules.ts';
import { checked, describe, idCoded, listChecked, resourceIn, resourceOut } from './common.ts';

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
  // one CA certificate in PEM; each way an upload is not has its own number (src/api/pem.ts)
  ca_pem: describe(
    z.string().superRefine((pem, ctx) => {
      const p = caPemProblem(pem);
      if (p)
        ctx.addIssue({
          code: 'custom',
          input: pem,
          message: p.message,
          params: { error_code: p.errorCode, values: p.values },
        });
    }),
    'one CA certificate in PEM',
  ),
});
export const CertificateAuthorityUpdate = z.strictObject({ ...resourceIn });

export type SSHCredential = z.infer<typeof SSHCredential>;
export type CertificateAuthority = z.infer<typeof CertificateAuthority>;
