// Module objects of routes and edges: input shapes (PUT bodies, inline at route create)
// and output shapes (what the API returns).
import { z } from 'zod';
import {
  ERROR_THRESHOLD_MAX,
  ERROR_THRESHOLD_MIN,
  NUM_BUCKETS_MAX,
  OAUTH_MANAGED_APP_PROVIDERS,
  OAUTH_PROVIDERS,
  SAML_NAMEID_FORMATS,
  TERMINATE_AT,
  TLS_MIN_VERSIONS,
  WEBHOOK_PROVIDERS,
  WEBHOOK_PROVIDERS_WITHOUT_SECRET,
} from '../limits.ts';
import { RULES } from '../rules.ts';
import { checked, idOf, Ref, rule, StringMap, uint32 } from './common.ts';

const enabled = { enabled: z.boolean().optional() };
const enabledOut = { enabled: z.boolean() };

// --- backend, ip restriction, mutual TLS: ids in, Refs out
export const BackendModuleIn = z.strictObject({
  ...enabled,
  backend_id: rule(
    z.string(),
    (s) => /^bkd[a-z]+_[A-Za-z0-9]+$/.test(s),
    'must be a backend id',
    'ERR_INVALID_ID',
  ),
});
export const BackendModule = z.object({ ...enabledOut, backend: Ref });

export const IPRestrictionModuleIn = z.strictObject({
  ...enabled,
  ip_policy_ids: z.array(idOf('ipPolicy')).min(1),
});
export const IPRestrictionModule = z.object({ ...enabledOut, ip_policies: z.array(Ref) });

export const MutualTLSModuleIn = z.strictObject({
  ...enabled,
  // absent or empty: no client certificates are checked (clients omit empty lists)
  certificate_authority_ids: z.array(idOf('certificateAuthority')).default([]),
});
export const MutualTLSModule = z.object({ ...enabledOut, certificate_authorities: z.array(Ref) });

// --- circuit breaker
const circuitBreakerFields = {
  tripped_duration: uint32,
  rolling_window: uint32,
  num_buckets: rule(
    uint32,
    (n) => n <= NUM_BUCKETS_MAX,
    `must be at most ${NUM_BUCKETS_MAX}`,
    'ERR_NUM_BUCKETS_TOO_LARGE',
  ),
  volume_threshold: uint32,
  error_threshold_percentage: rule(
    z.number(),
    (n) => n >= ERROR_THRESHOLD_MIN && n <= ERROR_THRESHOLD_MAX,
    'must be between 0 and 1.0 (not 0-100)',
    'ERR_ERROR_THRESHOLD_RANGE',
  ),
};
/** Generated clients drop zero numbers from JSON: an absent field is its zero value, the limits apply to what is present. */
const zeroWhenAbsent = <T extends Record<string, z.ZodType>>(fields: T) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v.default(0 as never)])) as {
    [K in keyof T]: z.ZodDefault<T[K]>;
  };
export const CircuitBreakerModuleIn = z.strictObject({ ...enabled, ...zeroWhenAbsent(circuitBreakerFields) });
export const CircuitBreakerModule = z.object({ ...enabledOut, ...circuitBreakerFields });

// --- compression, websocket tcp converter
export const CompressionModuleIn = z.strictObject({ ...enabled });
export const CompressionModule = z.object({ ...enabledOut });
export const WebsocketTCPConverterModuleIn = z.strictObject({ ...enabled });
export const WebsocketTCPConverterModule = z.object({ ...enabledOut });

// --- headers
const HeaderName = checked(RULES.headerName);
export const HeadersModuleIn = z.strictObject({
  ...enabled,
  add: z.record(HeaderName, z.string()).optional(),
  remove: z.array(HeaderName).optional(),
});
export const HeadersModule = z.object({ ...enabledOut, add: StringMap, remove: z.array(z.string()) });

// --- webhook verification
export const WebhookVerificationModuleIn = z
  .strictObject({
    ...enabled,
    provider: z.enum(WEBHOOK_PROVIDERS, { message: `must be one of ${WEBHOOK_PROVIDERS.join(', ')}` }),
    secret: z.string().optional(),
  })
  .superRefine((m, ctx) => {
    const needsSecret = !(WEBHOOK_PROVIDERS_WITHOUT_SECRET as readonly string[]).includes(m.provider);
    if (needsSecret && !m.secret) {
      ctx.addIssue({
        code: 'custom',
        path: ['secret'],
        message: `is required for provider ${m.provider}`,
        params: { error_code: 'ERR_WEBHOOK_SECRET_REQUIRED' },
      });
    }
  });
export const WebhookVerificationModule = z.object({
  ...enabledOut,
  provider: z.string(),
  secret: z.string().optional(),
});

// --- login modules: fields common to OAuth, SAML, OIDC
const sessionFields = {
  options_passthrough: z.boolean().optional(),
  cookie_prefix: z.string().optional(),
  inactivity_timeout: uint32.optional(),
  maximum_duration: uint32.optional(),
};

const oauthProviderFields = {
  client_id: z.string().min(1).optional(),
  client_secret: z.string().min(1).optional(),
  scopes: z.array(z.string()).optional(),
  email_addresses: z.array(z.string()).optional(),
  email_domains: z.array(z.string()).optional(),
};
const OAuthProviderIn = z.strictObject(oauthProviderFields);
const OAuthGitHubIn = z.strictObject({
  ...oauthProviderFields,
  teams: z.array(checked(RULES.githubTeam)).optional(),
  organizations: z.array(z.string()).optional(),
});
const OAuthProviderSet = z
  .strictObject(
    Object.fromEntries(
      OAUTH_PROVIDERS.map((p) => [p, (p === 'github' ? OAuthGitHubIn : OAuthProviderIn).optional()]),
    ) as {
      github: z.ZodOptional<typeof OAuthGitHubIn>;
    } & Record<Exclude<(typeof OAUTH_PROVIDERS)[number], 'github'>, z.ZodOptional<typeof OAuthProviderIn>>,
  )
  .superRefine((set, ctx) => {
    const given = Object.entries(set).filter(([, v]) => v !== undefined);
    if (given.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `must hold exactly one provider (${OAUTH_PROVIDERS.join(', ')}), got ${given.length}`,
        params: { error_code: 'ERR_OAUTH_ONE_PROVIDER' },
      });
      return;
    }
    const [name, p] = given[0] as [string, z.infer<typeof OAuthProviderIn>];
    const managed = (OAUTH_MANAGED_APP_PROVIDERS as readonly string[]).includes(name);
    if (p.client_id && !p.client_secret) {
      ctx.addIssue({
        code: 'custom',
        path: [name, 'client_secret'],
        message: 'is required when client_id is given',
        params: { error_code: 'ERR_OAUTH_CLIENT_SECRET_REQUIRED' },
      });
    }
    if (!p.client_id && p.client_secret) {
      ctx.addIssue({
        code: 'custom',
        path: [name, 'client_id'],
        message: 'is required when client_secret is given',
        params: { error_code: 'ERR_OAUTH_CLIENT_ID_REQUIRED' },
      });
    }
    if (p.scopes && p.scopes.length > 0 && !(p.client_id && p.client_secret)) {
      ctx.addIssue({
        code: 'custom',
        path: [name, 'scopes'],
        message: 'may be set only when both client_id and client_secret are given',
        params: { error_code: 'ERR_OAUTH_SCOPES_NEED_CLIENT' },
      });
    }
    if (!managed && !(p.client_id && p.client_secret)) {
      ctx.addIssue({
        code: 'custom',
        path: [name, 'client_id'],
        message: `and client_secret are required for provider ${name} (no managed app)`,
        params: { error_code: 'ERR_OAUTH_CLIENT_REQUIRED' },
      });
    }
  });
export const OAuthModuleIn = z.strictObject({
  ...enabled,
  provider: OAuthProviderSet,
  ...sessionFields,
  auth_check_interval: uint32.optional(),
});
/** The spec does not show OAuth module responses: the emulator echoes its input with defaults. */
export const OAuthModule = z.object({
  ...enabledOut,
  provider: z.record(z.string(), z.record(z.string(), z.unknown())),
  options_passthrough: z.boolean().optional(),
  cookie_prefix: z.string().optional(),
  inactivity_timeout: z.number().optional(),
  maximum_duration: z.number().optional(),
  auth_check_interval: z.number().optional(),
});

export const SAMLModuleIn = z.strictObject({
  ...enabled,
  ...sessionFields,
  idp_metadata: z.string().min(1, { message: 'is required (the IdP EntityDescriptor XML)' }),
  force_authn: z.boolean().optional(),
  allow_idp_initiated: z.boolean().optional(),
  authorized_groups: z.array(z.string()).optional(),
  nameid_format: z
    .enum(SAML_NAMEID_FORMATS, { message: `must be one of ${SAML_NAMEID_FORMATS.join(', ')}` })
    .optional(),
});
/** Output-only SAML fields; the operator copies them to status. */
export const SAMLOutputFields = z.object({
  idp_metadata_url: z.string().optional(),
  entity_id: z.string(),
  assertion_consumer_service_url: z.string(),
  single_logout_url: z.string(),
  request_signing_certificate_pem: z.string(),
  metadata_url: z.string(),
});
export const SAMLModule = z.object({
  ...enabledOut,
  options_passthrough: z.boolean(),
  cookie_prefix: z.string(),
  inactivity_timeout: z.number(),
  maximum_duration: z.number(),
  idp_metadata: z.string(),
  force_authn: z.boolean(),
  allow_idp_initiated: z.boolean(),
  authorized_groups: z.array(z.string()),
  nameid_format: z.string(),
  ...SAMLOutputFields.shape,
});

export const OIDCModuleIn = z.strictObject({
  ...enabled,
  ...sessionFields,
  issuer: checked(RULES.url),
  client_id: z.string().min(1),
  client_secret: z.string().min(1),
  // absent: no scopes (clients omit empty lists)
  scopes: z.array(z.string()).default([]),
});
export const OIDCModule = z.object({
  ...enabledOut,
  options_passthrough: z.boolean(),
  cookie_prefix: z.string(),
  inactivity_timeout: z.number(),
  maximum_duration: z.number(),
  issuer: z.string(),
  client_id: z.string(),
  client_secret: z.string(),
  scopes: z.array(z.string()),
});

// --- TLS termination: HTTPS edges take min_version only; TLS edges also terminate_at.
const MinVersion = z
  .enum(TLS_MIN_VERSIONS, { message: `must be one of ${TLS_MIN_VERSIONS.join(', ')}` })
  .nullable();
export const HTTPSTLSTerminationModuleIn = z.strictObject({ ...enabled, min_version: MinVersion.optional() });
export const TLSTerminationModuleIn = z
  .strictObject({
    ...enabled,
    terminate_at: z.enum(TERMINATE_AT).optional(),
    min_version: MinVersion.optional(),
  })
  .superRefine((m, ctx) => {
    if (m.terminate_at === 'upstream' && m.min_version != null) {
      ctx.addIssue({
        code: 'custom',
        path: ['min_version'],
        message: 'must be null when terminate_at is upstream',
        params: { error_code: 'ERR_MIN_VERSION_WITH_UPSTREAM' },
      });
    }
  });
export const TLSTerminationModule = z.object({
  ...enabledOut,
  terminate_at: z.string().optional(),
  min_version: z.string().nullable().optional(),
});

export type BackendModule = z.infer<typeof BackendModule>;
export type SAMLModule = z.infer<typeof SAMLModule>;
