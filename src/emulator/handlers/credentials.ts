// SSH credentials and certificate authorities (src/api/schemas/credentials.ts).
import { X509Certificate } from 'node:crypto';
import { ID_PREFIX } from '../../api/limits.ts';
import { badRequest, refuse } from '../errors.ts';
import type { Family } from './crud.ts';

/** The key of an OpenSSH public key line: its type and blob, without the comment. */
const sshKey = (line: string) => line.trim().split(/\s+/).slice(0, 2).join(' ');

const sshCredentials: Family = {
  path: '/ssh_credentials',
  coll: 'sshCredentials',
  prefix: ID_PREFIX.sshCredential,
  listKey: 'ssh_credentials',
  what: 'SSH credential',
  create: (ctx, b) => {
    const owner = (b.owner_id as string | undefined) ?? ctx.caller.ownerId;
    if (owner !== ctx.caller.ownerId && !ctx.caller.admin)
      throw refuse(
        'ERR_OWNER_NOT_ALLOWED',
        {},
        `owner_id: only admins may set an owner other than themselves (${ctx.caller.ownerId})`,
      );
    const key = (b.public_key as string).trim();
    const same = ctx.store.all('sshCredentials').find((c) => sshKey(c.public_key as string) === sshKey(key));
    if (same) throw refuse('ERR_SSH_KEY_EXISTS', { PUBKEY: sshKey(key) }, `SSH credential ${same.id}`);
    return { public_key: key, acl: b.acl ?? [], owner_id: owner };
  },
  emptyUpdate: 'ERR_CREDENTIAL_UPDATE_EMPTY',
  update: (_ctx, rec, b) => {
    if (b.acl !== undefined) rec.acl = b.acl;
  },
};

const certificateAuthorities: Family = {
  path: '/certificate_authorities',
  coll: 'certificateAuthorities',
  prefix: ID_PREFIX.certificateAuthority,
  listKey: 'certificate_authorities',
  what: 'certificate authority',
  create: (_ctx, b) => {
    try {
      const cert = new X509Certificate(b.ca_pem as string);
      return { ca_pem: b.ca_pem, subject_common_name: /CN=([^\n,]+)/.exec(cert.subject)?.[1] ?? '' };
    } catch {
      throw badRequest('ERR_INVALID_PEM', 'ca_pem: is not a parsable PEM certificate');
    }
  },
};

/** By the operations table's group. */
export const CREDENTIAL_FAMILIES = { sshCredentials, certificateAuthorities };
