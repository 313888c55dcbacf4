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
import { CROSS, HEADER_NAME_MAX_BYTES, HEADER_VALUE_MAX_BYTES, OIDC_ISSUER_MAX, RULES } from '../rules.ts';
import {
  admissionBounds,
  atMostBytes,
  checked,
  checkedNonEmpty,
  crossChecked,
  describe,
  idCoded,
  nonEmpty,
  Ref,
  ranged,
  StringMap,
  uint32,
} from './common.ts';

/** The longest session inactivity the API takes: one year (ERR_NGROK_7092). */
export const INACTIVITY_TIMEOUT_MAX = 365 * 24 * 3600;

const enabled = {
  enabled: describe(z.boolean(), 'false keeps the module configured but not applied to traffic').optional(),
};
const enabledOut = { enabled: z.boolean() };

// --- backend, ip restriction, mutual TLS: ids in, Refs out
export const BackendModuleIn = z.strictObject({
  ...enabled,
  backend_id: idCoded(
    'ERR_INVALID_BACKEND_ID',
    'tunnelGroupBackend',
    'weightedBackend',
    'httpResponseBackend',
  ),
});
export const BackendModule = z.object({ ...enabledOut, backend: Ref });

export const IPRestrictionModuleIn = z.strictObject({
  ...enabled,
  ip_policy_ids: describe(
    z.array(idCoded('ERR_INVALID_IP_POLICY_ID', 'ipPolicy')).min(1),
    'ids of the IP policies',
  ),
});
export const IPRestrictionModule = z.object({ ...enabledOut, ip_policies: z.array(Ref) });

export const MutualTLSModuleIn = z.strictObject({
  ...enabled,
  // absent or empty: no client certificates are checked (clients omit empty lists)
  certificate_authority_ids: describe(
    z.array(idCoded('ERR_INVALID_CA_ID', 'certificateAuthority')),
    'certificate authorities that validate client certificates',
  ).default([]),
});
export const MutualTLSModule = z.object({ ...enabledOut, certificate_authorities: z.array(Ref) });

// --- circuit breaker
// The API refuses a tripped duration, a rolling window or a number of buckets of 0
// (ERR_NGROK_7016..7018). A generated client omits a zero, so an absent number is 0 and refused
// too: the module as a whole is checked (a field's default skips the field's own checks), and
// admission asks for at least 1.
const circuitBreakerFields = {
  tripped_duration: describe(
    admissionBounds(uint32, { min: 1 }),
    'seconds to wait after tripping, at least 1',
  ),
  rolling_window: describe(admissionBounds(uint32, { min: 1 }), 'seconds of the rolling window, at least 1'),
  num_buckets: describe(
    admissionBounds(z.number().int().min(0), { min: 1, max: NUM_BUCKETS_MAX }),
    `buckets in the window, 1..${NUM_BUCKETS_MAX}`,
  ),
  volume_threshold: describe(uint32, 'requests in a window that can trip the circuit'),
  error_threshold_percentage: describe(
    ranged(
      z.number(),
      { min: ERROR_THRESHOLD_MIN, max: ERROR_THRESHOLD_MAX },
      'must be between 0 and 1.0 (not 0-100)',
      'ERR_ERROR_THRESHOLD_RANGE',
    ),
    'error ratio that trips the circuit, 0..1 (not 0-100)',
  ),
};
/** Generated clients drop zero numbers from JSON: an absent field is its zero value, the limits apply to what is present. */
const zeroWhenAbsent = <T extends Record<string, z.ZodType>>(fields: T) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v.default(0 as never)])) as {
    [K in keyof T]: z.ZodDefault<T[K]>;
  };
/** The circuit breaker's own bounds, each with the API's error code. */
const CIRCUIT_BREAKER_BOUNDS = [
  ['tripped_duration', 1, undefined, 'ERR_CIRCUIT_BREAKER_TRIPPED_DURATION'],
  ['rolling_window', 1, undefined, 'ERR_CIRCUIT_BREAKER_ROLLING_WINDOW'],
  ['num_buckets', 1, NUM_BUCKETS_MAX, 'ERR_CIRCUIT_BREAKER_NUM_BUCKETS'],
] as const;
export const CircuitBreakerModuleIn = z
  .strictObject({ ...enabled, ...zeroWhenAbsent(circuitBreakerFields) })
  .superRefine((m, ctx) => {
    for (const [field, min, max, errorCode] of CIRCUIT_BREAKER_BOUNDS) {
      const v = m[field];
      if (v < min || (max !== undefined && v > max))
        ctx.addIssue({
          code: 'custom',
          path: [field],
          input: v,
          message: max === undefined ? `must be at least ${min}` : `must be ${min}..${max}`,
          params: { error_code: errorCode },
        });
    }
  });
export const CircuitBreakerModule = z.object({ ...enabledOut, ...circuitBreakerFields });

// --- compression, websocket tcp converter
export const CompressionModuleIn = z.strictObject({ ...enabled });
export const CompressionModule = z.object({ ...enabledOut });
export const WebsocketTCPConverterModuleIn = z.strictObject({ ...enabled });
export const WebsocketTCPConverterModule = z.object({ ...enabledOut });

// --- headers
const HeaderName = checked(RULES.headerName, atMostBytes(HEADER_NAME_MAX_BYTES, 'ERR_HEADER_NAME_TOO_LONG'));
const HeaderValue = checked(
  RULES.headerValue,
  atMostBytes(HEADER_VALUE_MAX_BYTES, 'ERR_HEADER_VALUE_TOO_LONG'),
);
export const HeadersModuleIn = z.strictObject({
  ...enabled,
  add: describe(z.record(HeaderName, HeaderValue), 'header name -> value to add').optional(),
  remove: describe(z.array(HeaderName), 'header names to remove').optional(),
});
export const HeadersModule = z.object({ ...enabledOut, add: StringMap, remove: z.array(z.string()) });

// --- webhook verification
export const WebhookVerificationModuleIn = crossChecked(
  z.strictObject({
    ...enabled,
    provider: describe(
      z.enum(WEBHOOK_PROVIDERS, { message: `must be one of ${WEBHOOK_PROVIDERS.join(', ')}` }),
      'the webhook provider sending to this route',
    ),
    secret: describe(z.string(), 'the webhook signing secret').optional(),
  }),
  CROSS.requiredUnless('secret', 'provider', WEBHOOK_PROVIDERS_WITHOUT_SECRET, 'ERR_WEBHOOK_SECRET_REQUIRED'),
  // the provider that needs no secret takes none (ERR_NGROK_7026)
  CROSS.unsetWhen('secret', 'provider', WEBHOOK_PROVIDERS_WITHOUT_SECRET[0], 'ERR_WEBHOOK_SNS_SECRET'),
);
export const WebhookVerificationModule = z.object({
  ...enabledOut,
  provider: z.string(),
  secret: z.string().optional(),
});

// --- login modules: fields common to OAuth, SAML, OIDC
const sessionFields = {
  options_passthrough: describe(
    z.boolean(),
    'do not enforce authentication on OPTIONS requests (CORS)',
  ).optional(),
  cookie_prefix: describe(
    checked(RULES.cookiePrefix),
    'prefix of the session cookie (letters, digits and periods)',
  ).optional(),
  inactivity_timeout: describe(
    ranged(
      z.number().int().min(0),
      { max: INACTIVITY_TIMEOUT_MAX },
      `must be at most ${INACTIVITY_TIMEOUT_MAX} (one year)`,
      'ERR_INACTIVITY_TIMEOUT_TOO_LONG',
    ),
    'seconds of inactivity before reauthentication, at most one year',
  ).optional(),
  maximum_duration: describe(uint32, 'maximum session length in seconds').optional(),
};

const strings = (description: string) => describe(z.array(z.string()), description).optional();
/** A list whose values may not be empty (the API's own number for an empty one). */
const nonEmptyStrings = (description: string, errorCode: string) =>
  describe(z.array(nonEmpty(errorCode)), description).optional();
const oauthProviderFields = {
  client_id: describe(
    z.string().min(1),
    "your OAuth app's client ID (github, facebook, microsoft, google: omit it and the client secret to use the service's managed app)",
  ).optional(),
  client_secret: describe(z.string().min(1), "your OAuth app's client secret").optional(),
  scopes: strings('scopes requested from the provider (only with your own app)'),
  email_addresses: describe(
    z.array(checkedNonEmpty('ERR_OAUTH_EMPTY_EMAIL', RULES.emailAddress)),
    'only these email addresses may log in',
  ).optional(),
  email_domains: describe(
    z.array(checkedNonEmpty('ERR_OAUTH_EMPTY_EMAIL_DOMAIN', RULES.emailDomain)),
    'only email addresses of these domains may log in',
  ).optional(),
};
const githubFields = {
  teams: describe(
    z.array(checked(RULES.githubTeam)),
    'only members of these teams, as org-name/team-name',
  ).optional(),
  organizations: nonEmptyStrings(
    'only members of these organizations (slugs)',
    'ERR_OAUTH_EMPTY_ORGANIZATION',
  ),
};
/** One provider's settings; without a managed app, the provider needs your own. */
const oauthProvider = <T extends z.core.$ZodLooseShape>(name: string, fields: T) =>
  describe(
    crossChecked(
      z.strictObject(fields),
      CROSS.requiredWith('client_secret', 'client_id', 'ERR_OAUTH_CLIENT_SECRET_REQUIRED'),
      CROSS.requiredWith('client_id', 'client_secret', 'ERR_OAUTH_CLIENT_ID_REQUIRED'),
      CROSS.onlyWith('scopes', ['client_id', 'client_secret'], 'ERR_OAUTH_SCOPES_NEED_CLIENT'),
      ...((OAUTH_MANAGED_APP_PROVIDERS as readonly string[]).includes(name)
        ? []
        : [
            CROSS.requiredAll(
              ['client_id', 'client_secret'],
              `for provider ${name} (no managed app)`,
              'ERR_OAUTH_CLIENT_REQUIRED',
            ),
          ]),
    ),
    `log in with ${name}`,
  );
const OAuthGitHubIn = oauthProvider('github', { ...oauthProviderFields, ...githubFields });
type OAuthProviderIn = ReturnType<typeof oauthProvider<typeof oauthProviderFields>>;
const OAuthProviderSet = crossChecked(
  z.strictObject(
    Object.fromEntries(
      OAUTH_PROVIDERS.map((p) => [
        p,
        (p === 'github' ? OAuthGitHubIn : oauthProvider(p, oauthProviderFields)).optional(),
      ]),
    ) as { github: z.ZodOptional<typeof OAuthGitHubIn> } & Record<
      Exclude<(typeof OAUTH_PROVIDERS)[number], 'github'>,
      z.ZodOptional<OAuthProviderIn>
    >,
  ),
  CROSS.exactlyOne(OAUTH_PROVIDERS, 'ERR_OAUTH_ONE_PROVIDER'),
);
export const OAuthModuleIn = z.strictObject({
  ...enabled,
  provider: describe(OAuthProviderSet, 'exactly one OAuth provider and its settings'),
  ...sessionFields,
  auth_check_interval: describe(
    uint32,
    'seconds after which the user is rechecked at the provider (bounds access after revocation)',
  ).optional(),
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
  idp_metadata: describe(
    checkedNonEmpty('ERR_SAML_METADATA_REQUIRED', RULES.samlMetadata),
    'the IdP EntityDescriptor XML',
  ),
  force_authn: describe(
    z.boolean(),
    'the IdP asks for credentials on every login, even with a session',
  ).optional(),
  allow_idp_initiated: describe(
    z.boolean(),
    'the IdP may start a login itself (RelayState: the target URL)',
  ).optional(),
  authorized_groups: strings('only members of these groups may access the route'),
  nameid_format: describe(
    z.enum(SAML_NAMEID_FORMATS, { message: `must be one of ${SAML_NAMEID_FORMATS.join(', ')}` }),
    'name identifier format expected from the IdP',
  ).optional(),
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
  issuer: describe(
    checked(RULES.url, {
      test: (v) => v.length <= OIDC_ISSUER_MAX,
      message: `must be at most ${OIDC_ISSUER_MAX} characters`,
      errorCode: 'ERR_OIDC_ISSUER_TOO_LONG',
    }),
    `URL of the OpenID provider (base URL for discovery), at most ${OIDC_ISSUER_MAX} characters`,
  ),
  client_id: describe(z.string().min(1), "the app's client ID and audience"),
  client_secret: describe(z.string().min(1), "the app's client secret"),
  // absent: no scopes (clients omit empty lists)
  scopes: describe(z.array(z.string()), 'scopes requested from the identity provider').default([]),
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
const MinVersion = describe(
  z.enum(TLS_MIN_VERSIONS, { message: `must be one of ${TLS_MIN_VERSIONS.join(', ')}` }),
  'minimum TLS version (default: a safe choice of the service)',
).nullable();
export const HTTPSTLSTerminationModuleIn = z.strictObject({ ...enabled, min_version: MinVersion.optional() });
export const TLSTerminationModuleIn = crossChecked(
  z.strictObject({
    ...enabled,
    terminate_at: describe(
      z.enum(TERMINATE_AT),
      'edge terminates TLS; upstream passes it through',
    ).optional(),
    min_version: MinVersion.optional(),
  }),
  CROSS.unsetWhen('min_version', 'terminate_at', 'upstream', 'ERR_MIN_VERSION_WITH_UPSTREAM'),
);
export const TLSTerminationModule = z.object({
  ...enabledOut,
  terminate_at: z.string().optional(),
  min_version: z.string().nullable().optional(),
});

export type BackendModule = z.infer<typeof BackendModule>;
export type SAMLModule = z.infer<typeof SAMLModule>;
