// Every limit and enumeration the spec states, written once. The wire schemas, the
// emulator and the CRD schemas all read them from here.

export const DESCRIPTION_MAX_BYTES = 255;
export const METADATA_MAX_BYTES = 4096;
export const WEIGHT_MIN = 0;
export const WEIGHT_MAX = 10_000;
export const NUM_BUCKETS_MAX = 128;
export const ERROR_THRESHOLD_MIN = 0;
export const ERROR_THRESHOLD_MAX = 1;
export const UINT32_MAX = 4_294_967_295;
export const LIST_LIMIT_MAX = 100;
/** The spec: wait at least this long between an agent update and its restart. */
export const UPDATE_RESTART_MIN_WAIT_MS = 10_000;

export const RULE_ACTIONS = ['allow', 'deny'] as const;
export const RESTRICTION_TYPES = ['dashboard', 'api', 'agent', 'endpoints'] as const;
export const MATCH_TYPES = ['exact_path', 'path_prefix'] as const;
export const TERMINATE_AT = ['edge', 'upstream'] as const;
/** Not listed by the spec; these are the values the public API accepts. */
export const TLS_MIN_VERSIONS = ['1.0', '1.1', '1.2', '1.3'] as const;
export const TUNNEL_PROTOS = ['http', 'https', 'tcp', 'tls'] as const;
export const TRANSPORTS = ['service/v2', 'ssh'] as const;

export const OAUTH_PROVIDERS = [
  'github',
  'facebook',
  'microsoft',
  'google',
  'linkedin',
  'gitlab',
  'twitch',
  'amazon',
] as const;
/** The spec: for these providers client_id and client_secret may be omitted (a managed app is used). */
export const OAUTH_MANAGED_APP_PROVIDERS = ['github', 'facebook', 'microsoft', 'google'] as const;

/** Not listed by the spec; the providers the public API documents for webhook verification. */
export const WEBHOOK_PROVIDERS = [
  'sns',
  'authy',
  'castle',
  'clearbit',
  'facebook_graph_api',
  'facebook_messenger',
  'github',
  'gitlab',
  'hubspot',
  'intercom',
  'mailchimp',
  'mailgun',
  'mandrill',
  'modern_treasury',
  'pagerduty',
  'pinwheel',
  'plivo',
  'sendgrid',
  'shopify',
  'slack',
  'square',
  'stripe',
  'svix',
  'twilio',
  'twitter',
  'typeform',
  'xero',
  'zoom',
] as const;
/** The one "cloud notification-service provider" for which the spec needs no secret. */
export const WEBHOOK_PROVIDERS_WITHOUT_SECRET = ['sns'] as const;

export const SAML_DEFAULT_NAMEID_FORMAT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';
/** "only a subset of the SAML-specified values is supported" */
export const SAML_NAMEID_FORMATS = [
  'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
] as const;

/** Kind prefixes of identifiers, from the spec's conventions. */
export const ID_PREFIX = {
  ipPolicyRule: 'ipr',
  ipPolicy: 'ipp',
  ipRestriction: 'ipx',
  tunnelGroupBackend: 'bkdtg',
  weightedBackend: 'bkdwd',
  httpResponseBackend: 'bkdhr',
  sshCredential: 'sshcr',
  user: 'usr',
  bot: 'bot',
  credential: 'cr',
  tunnelSession: 'ts',
  tunnel: 'tn',
  endpoint: 'ep',
  httpsEdge: 'edghts',
  httpsEdgeRoute: 'edghtsrt',
  tcpEdge: 'edgtcp',
  tlsEdge: 'edgtls',
  certificateAuthority: 'ca',
  operation: 'op',
} as const;
export type IdKind = keyof typeof ID_PREFIX;

/**
 * Resources one may point another at (a rule's policy, a route's backend, an edge's route): a
 * raw id of one of these reaches into what the account holds. Identities (users, bots), agents'
 * sessions and certificate authorities (which only narrow who may reach one's own edge) are not.
 */
const REACHABLE: IdKind[] = [
  'ipPolicyRule',
  'ipPolicy',
  'ipRestriction',
  'tunnelGroupBackend',
  'weightedBackend',
  'httpResponseBackend',
  'sshCredential',
  'httpsEdge',
  'httpsEdgeRoute',
  'tcpEdge',
  'tlsEdge',
];
const REACHABLE_ID = new RegExp(`^(${REACHABLE.map((k) => ID_PREFIX[k]).join('|')})_[A-Za-z0-9]+$`);

const RESOURCE_ID = new RegExp(`^(${Object.values(ID_PREFIX).join('|')})_[A-Za-z0-9]+$`);
/** Whether a string has the shape of one of the API's ids (a known prefix). */
export const isResourceId = (id: string): boolean => RESOURCE_ID.test(id);

/** Whether a string is the id of a resource another may be pointed at. */
export const isReachableId = (id: string): boolean => REACHABLE_ID.test(id);

/** Backend ids a weighted backend may point at. */
