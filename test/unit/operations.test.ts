import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { flattenOperations } from '../../src/api/operations.ts';

// Every endpoint the spec lists, typed from the spec's tables by hand on purpose: this
// is the independent side the operations table is checked against.
const SPEC = `
POST /ip_policy_rules | GET /ip_policy_rules | GET /ip_policy_rules/{id} | PATCH /ip_policy_rules/{id} | DELETE /ip_policy_rules/{id}
POST /ip_restrictions | GET /ip_restrictions | GET /ip_restrictions/{id} | PATCH /ip_restrictions/{id} | DELETE /ip_restrictions/{id}
POST /backends/tunnel_group | GET /backends/tunnel_group | GET /backends/tunnel_group/{id} | PATCH /backends/tunnel_group/{id} | DELETE /backends/tunnel_group/{id}
POST /backends/weighted | GET /backends/weighted | GET /backends/weighted/{id} | PATCH /backends/weighted/{id} | DELETE /backends/weighted/{id}
POST /ssh_credentials | GET /ssh_credentials | GET /ssh_credentials/{id} | PATCH /ssh_credentials/{id} | DELETE /ssh_credentials/{id}
GET /tunnel_sessions | GET /tunnel_sessions/{id} | POST /tunnel_sessions/{id}/restart | POST /tunnel_sessions/{id}/stop | POST /tunnel_sessions/{id}/update
GET /tunnels | GET /tunnels/{id}
POST /edges/https/{edge_id}/routes
PUT /edges/https/{edge_id}/routes/{id}/saml | GET /edges/https/{edge_id}/routes/{id}/saml | DELETE /edges/https/{edge_id}/routes/{id}/saml
PUT /edges/https/{edge_id}/routes/{id}/oidc | GET /edges/https/{edge_id}/routes/{id}/oidc | DELETE /edges/https/{edge_id}/routes/{id}/oidc
PUT /edges/https/{edge_id}/routes/{id}/webhook_verification | GET /edges/https/{edge_id}/routes/{id}/webhook_verification | DELETE /edges/https/{edge_id}/routes/{id}/webhook_verification
PUT /edges/https/{edge_id}/routes/{id}/circuit_breaker | GET /edges/https/{edge_id}/routes/{id}/circuit_breaker | DELETE /edges/https/{edge_id}/routes/{id}/circuit_breaker
PUT /edges/https/{edge_id}/routes/{id}/backend | GET /edges/https/{edge_id}/routes/{id}/backend | DELETE /edges/https/{edge_id}/routes/{id}/backend
PUT /edges/https/{edge_id}/routes/{id}/ip_restriction | GET /edges/https/{edge_id}/routes/{id}/ip_restriction | DELETE /edges/https/{edge_id}/routes/{id}/ip_restriction
PUT /edges/https/{edge_id}/routes/{id}/response_headers | GET /edges/https/{edge_id}/routes/{id}/response_headers | DELETE /edges/https/{edge_id}/routes/{id}/response_headers
PUT /edges/https/{edge_id}/routes/{id}/request_headers | GET /edges/https/{edge_id}/routes/{id}/request_headers | DELETE /edges/https/{edge_id}/routes/{id}/request_headers
PUT /edges/https/{edge_id}/routes/{id}/compression | GET /edges/https/{edge_id}/routes/{id}/compression | DELETE /edges/https/{edge_id}/routes/{id}/compression
PUT /edges/https/{id}/tls_termination | GET /edges/https/{id}/tls_termination | DELETE /edges/https/{id}/tls_termination
PUT /edges/tcp/{id}/backend | GET /edges/tcp/{id}/backend | DELETE /edges/tcp/{id}/backend
PUT /edges/tls/{id}/mutual_tls | GET /edges/tls/{id}/mutual_tls | DELETE /edges/tls/{id}/mutual_tls
`;
// Neighbours the spec points at and the operator needs (issue: foundation, item 3).
const NEIGHBOURS = `
POST /ip_policies | GET /ip_policies | GET /ip_policies/{id} | PATCH /ip_policies/{id} | DELETE /ip_policies/{id}
POST /edges/https | GET /edges/https | GET /edges/https/{id} | PATCH /edges/https/{id} | DELETE /edges/https/{id}
POST /edges/tcp | GET /edges/tcp | GET /edges/tcp/{id} | PATCH /edges/tcp/{id} | DELETE /edges/tcp/{id}
POST /edges/tls | GET /edges/tls | GET /edges/tls/{id} | PATCH /edges/tls/{id} | DELETE /edges/tls/{id}
GET /edges/https/{edge_id}/routes/{id} | PATCH /edges/https/{edge_id}/routes/{id} | DELETE /edges/https/{edge_id}/routes/{id}
`;
const parse = (s: string) =>
  s
    .split(/[|\n]/)
    .map((x) => x.trim())
    .filter(Boolean);

describe('operations table', () => {
  const table = flattenOperations();
  const have = new Set(table.map(([, d]) => `${d.method} ${d.path}`));

  it.each(parse(SPEC).concat(parse(NEIGHBOURS)))('has %s', (endpoint) => {
    expect(have).toContain(endpoint);
  });

  it('binds a client method for every operation', () => {
    const client = createClient({ baseUrl: 'http://x.test', apiKey: 'k', rateLimitPerMinute: Infinity });
    for (const [name] of table) {
      const fn = name.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], client);
      expect(typeof fn, name).toBe('function');
    }
  });

  it('has no two operations on the same method and path', () => {
    expect(have.size).toBe(table.length);
  });
});
