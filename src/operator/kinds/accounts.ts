// The account kinds: EdgeAccount (a namespace's own API account) and ClusterEdgeAccount (one
// the platform team shares with the namespaces it names). They are not remote resources: the
// account reconciler (runtime/accounts/) checks their key and holds their clients.
import { z } from 'zod';
import {
  ACCOUNT_KINDS,
  type AccountKind,
  type AccountSpec,
  type AccountStatusFields,
  accountResource,
  type AccountRef as RuntimeAccountRef,
  type LabelSelector as RuntimeLabelSelector,
} from '../runtime/accounts/kinds.ts';
import {
  Conditions,
  cel,
  crdEnvelope,
  doc,
  immutable,
  noRepeats,
  ObservedGeneration,
  structural,
} from './crd-schema.ts';

export { ACCOUNT_KINDS, type AccountKind, accountResource };

/** `spec.accountRef` of every managed kind: set once, never changed or removed. */
export const AccountRef = immutable(
  doc(
    z.object({
      kind: doc(
        z.enum(ACCOUNT_KINDS),
        'EdgeAccount (in the same namespace) or ClusterEdgeAccount (one that admits this namespace)',
      ),
      name: doc(z.string().min(1).max(253), 'its name'),
    }),
    "the API account that holds the remote resource (immutable; default: the namespace's EdgeAccount named default, else the installation's own account)",
  ),
  'accountRef',
);
export type AccountRef = z.infer<typeof AccountRef>;
/** The spec-level rule: an accountRef once set cannot be removed (the field's own rule covers changes). */
export const ACCOUNT_REF_RULE = {
  rule: '!has(oldSelf.accountRef) || has(self.accountRef)',
  message: 'accountRef is immutable: it cannot be removed once set',
};

const keyRef = (cluster: boolean) =>
  doc(
    z.object({
      name: doc(z.string().min(1).max(253), 'name of the Secret'),
      key: doc(z.string().min(1).max(253), 'key in its data holding the API key'),
      ...(cluster
        ? {
            namespace: doc(
              z.string().min(1).max(63),
              "namespace of the Secret (default: the operator's namespace)",
            ).optional(),
          }
        : {}),
    }),
    cluster ? 'the Secret key holding the API key' : 'the Secret key (same namespace) holding the API key',
  );

/**
 * What `spec.apiURL` must look like: http or https, a host (a DNS name or IPv4 address, or an
 * IPv6 address in brackets; no user:password@), an optional port, then a path, query or
 * fragment of printable ASCII: no whitespace or control character anywhere. ASCII classes only,
 * so admission's RE2 and JavaScript's engine (the unit tests' CEL evaluator) read it alike (`\s`
 * is ASCII in RE2, Unicode in JavaScript). Not Kubernetes' CEL `isURL()`: it takes any scheme,
 * and the evaluator the unit tests run has no such function.
 */
export const API_URL_PATTERN = String.raw`^https?://([A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?([/?#][!-~]*)?$`;
/** A pattern as a single-quoted CEL string literal's content (CEL strings have escapes too). */
const quote = (pattern: string) => pattern.replaceAll('\\', '\\\\').replaceAll("'", "\\'");

const common = (cluster: boolean) => ({
  apiKeySecretRef: keyRef(cluster),
  apiURL: doc(
    cel(z.string().min(1).max(2048), {
      rule: `self.matches('${quote(API_URL_PATTERN)}')`,
      message:
        'apiURL must be an http(s) URL: http:// or https://, a host, an optional :port and path, and no whitespace or non-ASCII character',
    }),
    "the API's base URL (default: the operator's --api-url); another URL is used only when the installation allows it (--account-api-urls)",
  ).optional(),
  rateLimitPerMinute: doc(
    z.number().int().min(1).max(1_000_000),
    "requests a minute the account allows (default: the operator's --api-rate-limit)",
  ).optional(),
});

const LabelSelector = doc(
  z.object({
    matchLabels: doc(
      z.record(z.string().max(317), z.string().max(63)),
      'labels a namespace must all have, with these values',
    ).optional(),
    matchExpressions: doc(
      z
        .array(
          z.object({
            key: doc(z.string().max(317), 'the label the expression reads'),
            operator: doc(
              z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
              'In: the label is one of values; NotIn: it is absent or none of values; Exists: it is there; DoesNotExist: it is absent',
            ),
            values: doc(
              z.array(z.string().max(63)).max(100),
              'the values In and NotIn compare with (empty for Exists and DoesNotExist)',
            ).optional(),
          }),
        )
        .max(20),
      'expressions on labels a namespace must all meet',
    ).optional(),
  }),
  'a label selector on namespaces',
);
export type LabelSelector = z.infer<typeof LabelSelector>;

/**
 * `spec.namespaceSelector`'s rule: a selector with neither a label nor an expression selects
 * every namespace (Kubernetes' semantics), so a ClusterEdgeAccount would be open to all.
 */
export const NON_EMPTY_SELECTOR = {
  rule: '(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)',
  message:
    'namespaceSelector: an empty selector would admit every namespace: list namespaces in spec.namespaces or select them by label',
};

export const EdgeAccountSpec = z.object(common(false));
export const ClusterEdgeAccountSpec = z.object({
  ...common(true),
  namespaces: doc(
    noRepeats(z.array(z.string().min(1).max(63)).max(1000)),
    'namespaces that may use this account, by name',
  ).optional(),
  namespaceSelector: doc(
    cel(LabelSelector, NON_EMPTY_SELECTOR),
    'namespaces that may use this account, by label (at least one label or expression: an empty selector would select every namespace)',
  ).optional(),
  adoptFrom: doc(
    noRepeats(z.array(z.string().min(1).max(63)).max(1000)),
    "namespaces whose objects may adopt, observe or reference by raw id resources of this account that no object of this installation made (default: none but the operator's own namespace)",
  ).optional(),
});
export type EdgeAccountSpec = z.infer<typeof EdgeAccountSpec>;
export type ClusterEdgeAccountSpec = z.infer<typeof ClusterEdgeAccountSpec>;

export const AccountStatus = z.object({
  observedGeneration: ObservedGeneration.optional(),
  conditions: doc(Conditions, 'kstatus conditions: Ready, Reconciling, Stalled').optional(),
  url: doc(z.string(), 'the API base URL the account uses').optional(),
  objects: doc(
    z.object({
      count: doc(z.number().int(), 'objects using the account'),
      names: doc(z.array(z.string()).max(10), 'up to 10 of them, sorted (Kind namespace/name)').optional(),
    }),
    'objects using the account: how many, and the first few (Kind namespace/name)',
  ).optional(),
  lastMinute: doc(
    z.object({
      requests: doc(z.number().int(), 'API requests of the account in the last minute'),
      throttled: doc(z.number().int(), 'of them, how many the API answered 429 (rate limited)'),
    }),
    'API requests of the account in the last minute, and how many the API answered 429',
  ).optional(),
});
export type AccountStatus = z.infer<typeof AccountStatus>;

type Json = Record<string, unknown>;

export interface AccountKindInfo {
  kind: AccountKind;
  plural: string;
  scope: 'Namespaced' | 'Cluster';
  shortNames: string[];
  description: string;
  spec: z.ZodObject;
}

export const ACCOUNTS: AccountKindInfo[] = [
  {
    kind: 'EdgeAccount',
    plural: 'edgeaccounts',
    scope: 'Namespaced',
    shortNames: ['eacct'],
    description:
      'An API account (its key in a Secret, its URL and request budget) for the edge objects of its own namespace: those naming it in spec.accountRef, and, when it is named default, those naming no account.',
    spec: EdgeAccountSpec,
  },
  {
    kind: 'ClusterEdgeAccount',
    plural: 'clusteredgeaccounts',
    scope: 'Cluster',
    shortNames: ['ceacct'],
    description:
      'An API account the platform team shares with the namespaces it names (spec.namespaces, spec.namespaceSelector; with neither, none): their objects use it through spec.accountRef.',
    spec: ClusterEdgeAccountSpec,
  },
];

export function accountCrd(a: AccountKindInfo): Json {
  const spec = structural(z.toJSONSchema(a.spec, { target: 'openapi-3.0', io: 'input' })) as Json;
  const status = structural(z.toJSONSchema(AccountStatus, { target: 'openapi-3.0', io: 'output' })) as Json;
  spec.description = 'the account: its key, URL and budget';
  status.description = 'observed state, written by the operator';
  return crdEnvelope({
    kind: a.kind,
    plural: a.plural,
    shortNames: a.shortNames,
    scope: a.scope,
    description: a.description,
    spec,
    status,
    columns: [
      { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
      { name: 'URL', type: 'string', jsonPath: '.status.url' },
      { name: 'Objects', type: 'integer', jsonPath: '.status.objects.count' },
      {
        name: 'Reason',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
        priority: 1,
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}

// the runtime reads these shapes (runtime/accounts/kinds.ts): the schemas must give them
type Gives<A, B extends A> = B;
export type SchemasGiveWhatTheRuntimeReads = [
  Gives<RuntimeAccountRef, AccountRef>,
  Gives<RuntimeLabelSelector, LabelSelector>,
  Gives<Omit<AccountSpec, 'apiKeySecretRef'>, Omit<ClusterEdgeAccountSpec, 'apiKeySecretRef'>>,
  Gives<AccountStatusFields, Omit<AccountStatus, 'conditions'>>,
];
