// An account made by hand, as teams have them before GitOps: every kind, references between
// them, every route module (each login module on an edge of its own, as the API asks), secrets,
// user metadata, and one resource another installation of the operator manages. Shared by the
// export tests (integration and e2e).
import type { EdgeClient } from '../../src/api/client.ts';
import { encodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { selfSignedCaPem } from '../../src/util/x509.ts';

export const SECRETS = {
  oidc: 'oidc-s3cret-value',
  webhook: 'whsec_webhook-s3cret',
  oauth: 'gh-oauth-s3cret',
};

export async function populateAccount(c: EdgeClient) {
  const corp = await c.ipPolicies.create({ description: 'corp', metadata: 'team=net' });
  const office = await c.ipPolicies.create({ description: 'Office (Berlin)!' });
  await c.ipPolicyRules.create({ ip_policy_id: corp.id, cidr: '10.0.0.0/8', action: 'allow' });
  await c.ipPolicyRules.create({ ip_policy_id: corp.id, cidr: '192.168.0.0/16', action: 'deny' });
  await c.ipPolicyRules.create({ ip_policy_id: office.id, cidr: '203.0.113.0/24', action: 'allow' });
  await c.ipRestrictions.create({ type: 'dashboard', enforced: true, ip_policy_ids: [corp.id, office.id] });
  const web = await c.tunnelGroupBackends.create({
    description: 'web',
    labels: { app: 'web', track: 'stable' },
  });
  const canary = await c.tunnelGroupBackends.create({ labels: { app: 'web', track: 'canary' } });
  const split = await c.weightedBackends.create({
    description: '90/10 canary split',
    backends: { [web.id]: 90, [canary.id]: 10 },
  });
  await c.sshCredentials.create({
    description: 'CI deploy key',
    public_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIL3h7ijhamz2kZX9906R9ie8QWbu+LvTpwK26QaIrkfJ deploy@ci',
    acl: ['bind:*.app.example.com'],
  });
  const edge = await c.httpsEdges.create({
    description: 'public app',
    hostports: ['app.example.com:443'],
    tls_termination: { min_version: '1.2' },
  });
  await c.httpsEdgeRoutes.create(edge.id, {
    match_type: 'path_prefix',
    match: '/',
    backend: { backend_id: split.id },
    ip_restriction: { ip_policy_ids: [corp.id] },
    circuit_breaker: {
      tripped_duration: 10,
      rolling_window: 60,
      num_buckets: 10,
      volume_threshold: 20,
      error_threshold_percentage: 0.5,
    },
    compression: { enabled: true },
    response_headers: { add: { 'Strict-Transport-Security': 'max-age=63072000' }, remove: ['Server'] },
    oidc: {
      issuer: 'https://accounts.example.com',
      client_id: 'edge-app',
      client_secret: SECRETS.oidc,
      scopes: ['openid', 'email'],
    },
  });
  await c.httpsEdgeRoutes.create(edge.id, {
    match_type: 'exact_path',
    match: '/webhooks/stripe',
    backend: { backend_id: web.id },
    webhook_verification: { provider: 'stripe', secret: SECRETS.webhook },
    request_headers: { enabled: false, add: { 'x-from': 'edge' } },
  });
  // a login module on one route of an edge (ERR_NGROK_7155), OAuth on the route '/' only
  // (ERR_NGROK_7127): OAuth and SAML have an edge each
  const login = await c.httpsEdges.create({ description: 'login', hostports: ['login.example.com:443'] });
  await c.httpsEdgeRoutes.create(login.id, {
    description: 'login',
    match_type: 'path_prefix',
    match: '/',
    backend: { backend_id: web.id },
    oauth: {
      provider: {
        github: {
          client_id: 'gh-app',
          client_secret: SECRETS.oauth,
          scopes: ['read:org'],
          teams: ['acme/eng'],
        },
      },
      auth_check_interval: 300,
    },
  });
  const sso = await c.httpsEdges.create({ description: 'sso', hostports: ['sso.example.com:443'] });
  await c.httpsEdgeRoutes.create(sso.id, {
    match_type: 'path_prefix',
    match: '/sso',
    saml: { idp_metadata: '<EntityDescriptor/>', authorized_groups: ['eng'], cookie_prefix: 'sso' },
    websocket_tcp_converter: { enabled: true },
  });
  await c.tcpEdges.create({ hostports: ['1.tcp.example.com:20001'], backend: { backend_id: web.id } });
  await c.tlsEdges.create({
    hostports: ['tls.example.com:443'],
    tls_termination: { terminate_at: 'upstream' },
    backend: { backend_id: web.id },
  });
  // certificate authorities are no kind of the operator's: the spec keeps their ids
  const ca = await c.certificateAuthorities.create({ ca_pem: await selfSignedCaPem('Clients CA') });
  await c.tlsEdges.create({
    description: 'mtls',
    hostports: ['mtls.example.com:443'],
    mutual_tls: { certificate_authority_ids: [ca.id] },
    tls_termination: { min_version: '1.3' },
  });
  // managed by another installation: never exported
  const foreign = await c.ipPolicies.create({
    description: 'theirs',
    metadata: encodeMetadata({ cluster: 'other-cluster', uid: 'u-1', object: 'IPPolicy/prod/theirs' }, ''),
  });
  return { foreign: foreign.id, ca: ca.id, resources: 20 };
}
