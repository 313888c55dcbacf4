// The rules the API holds one HTTPS edge route to across its login modules, stated once for
// both sides as rules.ts states the others: the emulator runs `test` on wire names, CRD
// admission gets `cel` on the CRD's names (`n`), and the CRD's zod side runs `test` on those.
import type { CrossRule } from './rules.ts';

/** The login modules of a route. */
export const LOGIN_MODULES = ['oauth', 'saml', 'oidc'] as const;

/** A login module counts when it is there and not disabled (absent `enabled` is true). */
const enabled = (m: unknown) =>
  !!m && typeof m === 'object' && (m as { enabled?: unknown }).enabled !== false;
const celEnabled = (f: string) => `has(self.${f}) && (!has(self.${f}.enabled) || self.${f}.enabled)`;

export const ROUTE_RULES = {
  /**
   * A route enables one login module at most (ERR_NGROK_7079); a disabled one does not count.
   * Admission states it on one route object; the API also holds module PUTs and PATCHes to it.
   */
  oneLoginModule: {
    field: '',
    must: (n) => `may enable only one login module of ${LOGIN_MODULES.map(n).join(', ')}`,
    errorCode: 'ERR_CONFLICTING_AUTH_MODULES',
    test: (get) => LOGIN_MODULES.filter((f) => enabled(get(f))).length <= 1,
    cel: (n) => `[${LOGIN_MODULES.map((f) => celEnabled(n(f))).join(', ')}].filter(x, x).size() <= 1`,
  },
  /**
   * OAuth only on the route whose match is '/' (ERR_NGROK_7127), of either match type: the
   * reference names the match alone ("could not configure for route <MATCH>"), so an
   * exact_path '/' is the route '/' too. A disabled OAuth module does not count, as above.
   */
  oauthAtRoot: {
    field: 'match',
    must: (n) => `must be '/' while ${n('oauth')} is enabled: the API takes OAuth on the route '/' only`,
    errorCode: 'ERR_OAUTH_ROUTE_NOT_ROOT',
    test: (get) => !enabled(get('oauth')) || get('match') === '/',
    cel: (n) => `!(${celEnabled(n('oauth'))}) || self.${n('match')} == '/'`,
  },
} satisfies Record<string, CrossRule>;
