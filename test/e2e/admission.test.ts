// Values the API refuses are refused at `kubectl apply --dry-run=server` already: the CRDs
// carry the wire schemas' own patterns, so users get the error at apply time, not as
// Stalled/APIRejected later. Each case here was once accepted by admission.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/operator/apply.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { sshPublicKey } from '../integration/harness.ts';
import { obj, skipReason, type World, world } from './harness.ts';

describe.skipIf(!!skipReason)('admission of what the API would refuse', () => {
  let w: World;
  beforeAll(async () => {
    w = await world('admit');
  });
  afterAll(async () => {
    await w?.close();
  });
  const refused = async (o: KubeObject) => {
    const e = await apply(w.kube, [o], w.ns, { dryRun: true }).then(
      () => undefined,
      (err: Error & { status?: number }) => err,
    );
    expect(e, `${o.kind} ${JSON.stringify(o.spec)} was accepted`).toBeDefined();
    expect(e!.status).toBe(422);
    return e!.message;
  };
  const route = (spec: Record<string, unknown>) =>
    obj('HTTPSEdgeRoute', w.ns, 'r', { edgeID: 'edghts_1', matchType: 'path_prefix', match: '/', ...spec });

  it.each([['app.example.com:99999'], ['app.example.com:0'], [`${'a'.repeat(70)}.example.com:443`]])(
    'hostport %s',
    async (hp) => {
      expect(await refused(obj('HTTPSEdge', w.ns, 'e', { hostports: [hp] }))).toContain('spec.hostports[0]');
    },
  );

  // from the public error reference (src/emulator/errors.json): refused by one object alone
  it.each([
    ['10.1.2.3/8', 'cidr must be written with the lowest address of its range'],
    ['2001:db8::1/32', 'cidr must be written with the lowest address of its range'],
    ['10.0.0.1', 'cidr must have a mask'],
  ])('an IP policy rule with cidr %s', async (cidr, message) => {
    expect(
      await refused(obj('IPPolicyRule', w.ns, 'r', { ipPolicyID: 'ipp_1', cidr, action: 'allow' })),
    ).toContain(message);
  });

  it('a tunnel-group label with = in it', async () => {
    expect(await refused(obj('TunnelGroupBackend', w.ns, 't', { labels: { 'app=x': 'web' } }))).toContain(
      "labels must not hold '=' in a key or a value",
    );
  });

  it('a circuit breaker with a zero tripped duration', async () => {
    expect(
      await refused(
        route({
          circuitBreaker: {
            trippedDuration: 0,
            rollingWindow: 10,
            numBuckets: 10,
            volumeThreshold: 20,
            errorThresholdPercentage: 0.5,
          },
        }),
      ),
    ).toContain('trippedDuration');
  });

  it('an sns webhook verification with a secret', async () => {
    expect(
      await refused(route({ webhookVerification: { provider: 'sns', secretRef: { name: 's', key: 'k' } } })),
    ).toContain('secretRef must be unset when provider is sns');
  });

  it('mutual TLS on a TLS edge that passes TLS upstream (ERR_NGROK_7062); disabled, it may stay', async () => {
    const edge = (mutualTLS: Record<string, unknown>) =>
      obj('TLSEdge', w.ns, 't', {
        tlsTermination: { terminateAt: 'upstream' },
        mutualTLS: { certificateAuthorityIDs: ['ca_1'], ...mutualTLS },
      });
    expect(await refused(edge({}))).toContain(
      'spec.mutualTLS: Invalid value: mutualTLS must be unset or disabled when tlsTermination.terminateAt is upstream',
    );
    await apply(w.kube, [edge({ enabled: false })], w.ns, { dryRun: true });
  });

  it('a header name with a space, in add and in remove', async () => {
    expect(await refused(route({ requestHeaders: { add: { 'bad header': 'x' } } }))).toContain(
      'add keys must be an HTTP header name',
    );
    expect(await refused(route({ responseHeaders: { remove: ['bad header'] } }))).toContain(
      'spec.responseHeaders.remove[0]',
    );
  });

  it('an OIDC issuer that is not a URL', async () => {
    const message = await refused(
      route({
        oidc: {
          issuer: 'not a url',
          clientID: 'c',
          clientSecretRef: { name: 's', key: 'k' },
          scopes: ['openid'],
        },
      }),
    );
    expect(message).toContain('issuer must be a URL');
    // a path is a request URI to Kubernetes' isURL, but not an issuer the API takes
    for (const issuer of ['/realms/x', 'https://'])
      expect(
        await refused(
          route({
            oidc: { issuer, clientID: 'c', clientSecretRef: { name: 's', key: 'k' }, scopes: ['openid'] },
          }),
        ),
      ).toContain('issuer must be a URL');
  });

  it('an SSH key cut short or labelled with another type is refused; one pasted as a YAML block (a newline after it) is not', async () => {
    const key = sshPublicKey();
    const [type, blob] = key.split(' ');
    for (const publicKey of [`${type} AAAA`, `ssh-rsa ${blob}`])
      expect(await refused(obj('SSHCredential', w.ns, 'k', { publicKey }))).toContain('spec.publicKey');
    await apply(w.kube, [obj('SSHCredential', w.ns, 'k', { publicKey: `${key}\n` })], w.ns, { dryRun: true });
  });

  it('a GitHub team without a slash', async () => {
    const message = await refused(
      route({
        oauth: {
          provider: {
            github: { clientID: 'c', clientSecretRef: { name: 's', key: 'k' }, teams: ['engineering'] },
          },
        },
      }),
    );
    expect(message).toContain('spec.oauth.provider.github.teams[0]');
  });

  it('OAuth lists the API holds unique and lower case (ERR_NGROK_7046-7049, 7067, 7068)', async () => {
    const google = (p: Record<string, unknown>) => route({ oauth: { provider: { google: p } } });
    expect(await refused(google({ emailAddresses: ['Alice@example.com'] }))).toContain(
      'spec.oauth.provider.google.emailAddresses: Invalid value: emailAddresses must be written in lower case',
    );
    expect(await refused(google({ emailDomains: ['Example.com'] }))).toContain(
      'emailDomains must be written in lower case',
    );
    expect(await refused(google({ emailDomains: ['example.com', 'example.com'] }))).toContain(
      'spec.oauth.provider.google.emailDomains: Invalid value: emailDomains must not hold a value twice',
    );
    const github = { clientID: 'c', clientSecretRef: { name: 's', key: 'k' } };
    expect(
      await refused(
        route({ oauth: { provider: { github: { ...github, organizations: ['acme', 'acme'] } } } }),
      ),
    ).toContain(
      'spec.oauth.provider.github.organizations: Invalid value: organizations must not hold a value twice',
    );
    await apply(
      w.kube,
      [google({ emailAddresses: ['alice@example.com'], emailDomains: ['example.com'] })],
      w.ns,
      {
        dryRun: true,
      },
    );
  });

  it('a header added twice in different cases (ERR_NGROK_7069; response headers would keep one)', async () => {
    for (const module of ['requestHeaders', 'responseHeaders'])
      expect(await refused(route({ [module]: { add: { 'X-Team': 'a', 'x-team': 'b' } } }))).toContain(
        `spec.${module}.add: Invalid value: add must not name a key twice in different cases`,
      );
  });

  // found by the unit suite's parity probes (test/unit/parity.test.ts)
  it('an empty OIDC client ID, and a backend id of no backend kind', async () => {
    expect(
      await refused(
        route({
          oidc: {
            issuer: 'https://id.example.com',
            clientID: '',
            clientSecretRef: { name: 's', key: 'k' },
            scopes: ['openid'],
          },
        }),
      ),
    ).toContain('spec.oidc.clientID');
    expect(await refused(route({ backend: { backendID: 'bkdxx_1' } }))).toContain('spec.backend.backendID');
  });

  // rules across fields: the CEL comes from the same table (rules.ts CROSS) as the API's check
  it('rules across fields: webhook secret, OAuth provider settings, TLS termination, a lone "*"', async () => {
    const secret = { name: 's', key: 'k' };
    expect(await refused(route({ webhookVerification: { provider: 'github' } }))).toContain(
      'secretRef is required unless provider is sns',
    );
    expect(await refused(route({ oauth: { provider: { gitlab: {} } } }))).toContain(
      'clientID and clientSecretRef are required for provider gitlab',
    );
    expect(await refused(route({ oauth: { provider: { google: { scopes: ['email'] } } } }))).toContain(
      'scopes may be set only when clientID and clientSecretRef are given',
    );
    expect(
      await refused(
        route({ oauth: { provider: { google: {}, github: { clientID: 'c', clientSecretRef: secret } } } }),
      ),
    ).toContain('must hold exactly one of github');
    expect(
      await refused(
        obj('TLSEdge', w.ns, 't', { tlsTermination: { terminateAt: 'upstream', minVersion: '1.2' } }),
      ),
    ).toContain('minVersion must be unset when terminateAt is upstream');
    expect(
      await refused(
        obj('SSHCredential', w.ns, 'k', { publicKey: sshPublicKey(), acl: ['*', 'bind:x.example.com'] }),
      ),
    ).toContain('acl must hold the rule "*" only on its own');
  });

  // CEL over a map's values, and across a route's modules (src/api/rules.ts)
  // (a raw DEL never reaches CEL here: the API server refuses the apply body first, with 400)
  it('a header value with CR or LF, in request and response headers', async () => {
    const message = 'add values must hold no NUL, CR, LF or DEL character';
    expect(
      await refused(route({ requestHeaders: { add: { 'X-Injected': 'a\r\nSet-Cookie: b' } } })),
    ).toContain(message);
    expect(await refused(route({ responseHeaders: { add: { 'X-Lf': 'a\nb' } } }))).toContain(message);
  });

  it('header values as long as the API takes (1,024), 5,120 characters in all per module', async () => {
    const csp = `default-src 'self'; script-src 'self' ${'https://cdn.example.com '.repeat(42)}`.slice(
      0,
      1024,
    );
    expect(csp).toHaveLength(1024);
    // a Content-Security-Policy longer than 256 characters: admitted (it was refused until now)
    await apply(w.kube, [route({ responseHeaders: { add: { 'Content-Security-Policy': csp } } })], w.ns, {
      dryRun: true,
    });
    const six = Object.fromEntries([...Array(6).keys()].map((i) => [`x-long-${i}`, csp]));
    for (const module of ['requestHeaders', 'responseHeaders'])
      expect(await refused(route({ [module]: { add: six } }))).toContain(
        `spec.${module}.add: Invalid value: add values must hold at most 5120 characters in all`,
      );
    // one value past the API's 1,024: refused, naming it
    expect(
      await refused(route({ responseHeaders: { add: { 'Content-Security-Policy': `${csp}x` } } })),
    ).toContain('spec.responseHeaders.add.Content-Security-Policy: Too long: may not be more than 1024');
  });

  it('a route with more than one login module enabled', async () => {
    const oidc = {
      issuer: 'https://id.example.com',
      clientID: 'c',
      clientSecretRef: { name: 's', key: 'k' },
      scopes: ['openid'],
    };
    const message = 'may enable only one login module of oauth, saml, oidc';
    expect(await refused(route({ oauth: { provider: { github: {} } }, oidc }))).toContain(message);
    expect(await refused(route({ saml: { idpMetadata: '<EntityDescriptor/>' }, oidc }))).toContain(message);
  });

  it("OAuth on a route other than '/', of either match type", async () => {
    const oauth = { provider: { github: {} } };
    const message = "match must be '/' while oauth is enabled";
    for (const spec of [
      { match: '/admin', oauth },
      { matchType: 'exact_path', match: '/login', oauth },
    ]) {
      const e = await refused(route(spec));
      expect(e).toContain(message);
      expect(e).toContain('spec.match');
    }
  });

  it('OAuth e-mail addresses and domains that are none, a cookie prefix of other characters, SAML metadata that is not XML', async () => {
    const github = (fields: Record<string, unknown>) => route({ oauth: { provider: { github: fields } } });
    expect(await refused(github({ emailAddresses: ['not-an-address'] }))).toContain(
      'spec.oauth.provider.github.emailAddresses[0]',
    );
    expect(await refused(github({ emailDomains: ['not a domain'] }))).toContain(
      'spec.oauth.provider.github.emailDomains[0]',
    );
    expect(await refused(route({ oauth: { provider: { github: {} }, cookiePrefix: 'edge_' } }))).toContain(
      'spec.oauth.cookiePrefix',
    );
    expect(await refused(route({ saml: { idpMetadata: 'https://idp.example.com/metadata' } }))).toContain(
      'spec.saml.idpMetadata',
    );
  });

  it('and the valid forms of the same fields pass', async () => {
    await apply(
      w.kube,
      [
        obj('HTTPSEdge', w.ns, 'e', { hostports: ['*.example.com:65535', 'a.example.com:1'] }),
        route({
          requestHeaders: { add: { 'X-Forwarded-Proto': 'https', 'X-Tab': 'a\tb' } },
          responseHeaders: { remove: ['Server'] },
          oauth: {
            provider: {
              github: {
                clientID: 'c',
                clientSecretRef: { name: 's', key: 'k' },
                teams: ['acme/eng'],
                emailAddresses: ['alice@example.com'],
                emailDomains: ['example.com'],
              },
            },
            cookiePrefix: 'edge.sso',
          },
          // a disabled login module does not count
          saml: { enabled: false, idpMetadata: '<?xml version="1.0"?>\n<md:EntityDescriptor/>\n' },
        }),
        // OAuth on exact_path '/' is the route '/' too; a disabled OAuth module counts nowhere
        obj('HTTPSEdgeRoute', w.ns, 'exact', {
          edgeID: 'edghts_1',
          matchType: 'exact_path',
          match: '/',
          oauth: { provider: { github: {} } },
        }),
        obj('HTTPSEdgeRoute', w.ns, 'off', {
          edgeID: 'edghts_1',
          matchType: 'path_prefix',
          match: '/admin',
          oauth: { enabled: false, provider: { github: {} } },
        }),
      ],
      w.ns,
      { dryRun: true },
    );
  });
});
