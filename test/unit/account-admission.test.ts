// The account kinds' admission rules, as the generated CRDs carry them: each rule is read from
// the YAML `npm run crds` writes and evaluated with a CEL evaluator on good and bad values.
import { evaluate } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ACCOUNTS, API_URL_PATTERN } from '../../src/operator/kinds/accounts.ts';
import { renderCrds } from '../../src/operator/kinds/generate-crds.ts';

type Rule = { rule: string; message?: string };
type Node = {
  description?: string;
  properties?: Record<string, Node>;
  items?: Node;
  'x-kubernetes-validations'?: Rule[];
  'x-kubernetes-list-type'?: string;
  type?: string;
};

const files = renderCrds();
const specOf = (plural: string): Node =>
  parse(files.get(`${plural}.edge.tunnel.dev.yaml`)!).spec.versions[0].schema.openAPIV3Schema.properties.spec;
const cluster = specOf('clusteredgeaccounts');
const namespaced = specOf('edgeaccounts');

/** The messages of the field's rules that refuse this value (none: admitted). */
const refusals = (field: Node, self: unknown): string[] =>
  (field['x-kubernetes-validations'] ?? [])
    .filter((r) => evaluate(r.rule, { self }) !== true)
    .map((r) => r.message ?? r.rule);

describe('ClusterEdgeAccount spec.namespaceSelector', () => {
  const selector = cluster.properties!.namespaceSelector!;

  it.each([
    ['{}', {}],
    ['{matchLabels: {}}', { matchLabels: {} }],
    ['{matchExpressions: []}', { matchExpressions: [] }],
    ['{matchLabels: {}, matchExpressions: []}', { matchLabels: {}, matchExpressions: [] }],
  ])('an empty selector %s is refused: it would admit every namespace', (_s, self) => {
    expect(refusals(selector, self)).toEqual([
      'namespaceSelector: an empty selector would admit every namespace: list namespaces in spec.namespaces or select them by label',
    ]);
  });

  it.each([
    ['a label', { matchLabels: { team: 'a' } }],
    ['an expression', { matchExpressions: [{ key: 'team', operator: 'In', values: ['a'] }] }],
    ['a label and no expression', { matchLabels: { team: 'a' }, matchExpressions: [] }],
    ['an expression and no label', { matchLabels: {}, matchExpressions: [{ key: 'x', operator: 'Exists' }] }],
  ])('a selector with %s is admitted', (_s, self) => {
    expect(refusals(selector, self)).toEqual([]);
  });

  it('kubectl explain describes the selector, its labels, its expressions and their fields', () => {
    const expr = selector.properties!.matchExpressions!;
    for (const n of [
      selector,
      selector.properties!.matchLabels!,
      expr,
      ...Object.values(expr.items!.properties!),
    ])
      expect(n.description).toBeTruthy();
    expect(Object.keys(expr.items!.properties!).sort()).toEqual(['key', 'operator', 'values']);
  });
});

describe('spec.apiURL', () => {
  const good = [
    'https://api.example.test/v1',
    'https://api.example.test',
    'http://127.0.0.1:8080',
    'http://edge-emulator.edge-system.svc:8080/',
    'https://[::1]:8443/api?x=1#y',
  ];
  const bad = [
    'https://api.example.test ',
    ' https://api.example.test',
    'https://api.example.test/v 1',
    'https://api.example.test/v1\n',
    'https://api.example.test/\u00a0',
    'ftp://x',
    'file:///etc/passwd',
    'HTTPS://api.example.test',
    'https://',
    'https:///path',
    'https://:443/',
    'https://user:password@api.example.test/',
    'https://api.example.test:/',
    'api.example.test',
  ];

  it.each(ACCOUNTS.map((a) => [a.kind, a.plural]))(
    '%s: http(s) URLs with a host are admitted',
    (_k, plural) => {
      const field = specOf(plural).properties!.apiURL!;
      for (const url of good) expect(refusals(field, url), JSON.stringify(url)).toEqual([]);
    },
  );

  it.each(ACCOUNTS.map((a) => [a.kind, a.plural]))(
    '%s: whitespace, another scheme or no host is refused, naming the field',
    (_k, plural) => {
      const field = specOf(plural).properties!.apiURL!;
      for (const url of bad) {
        const messages = refusals(field, url);
        expect(messages, JSON.stringify(url)).toHaveLength(1);
        expect(messages[0]).toMatch(/^apiURL must be an http\(s\) URL/);
      }
    },
  );

  it('the CRD rule is the pattern, escaped for a CEL string, and reads as JavaScript does', () => {
    const rule = namespaced.properties!.apiURL!['x-kubernetes-validations']![0]!.rule;
    expect(rule).toBe(
      String.raw`self.matches('^https?://([A-Za-z0-9_.-]+|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?([/?#][!-~]*)?$')`,
    );
    const re = new RegExp(API_URL_PATTERN);
    for (const url of good) expect(re.test(url), url).toBe(true);
    for (const url of bad) expect(re.test(url), url).toBe(false);
  });
});

describe('ClusterEdgeAccount spec.adoptFrom', () => {
  it('is a set of namespace names, on ClusterEdgeAccount only', () => {
    const adoptFrom = cluster.properties!.adoptFrom!;
    expect(adoptFrom.type).toBe('array');
    expect(adoptFrom['x-kubernetes-list-type']).toBe('set');
    expect(adoptFrom.items).toMatchObject({ type: 'string', minLength: 1, maxLength: 63 });
    expect(adoptFrom.description).toMatch(/^namespaces whose objects may adopt/);
    expect(namespaced.properties!.adoptFrom).toBeUndefined();
  });

  it('the two kinds differ only by the cluster fields', () => {
    const extra = Object.keys(cluster.properties!).filter((k) => !(k in namespaced.properties!));
    expect(extra.sort()).toEqual(['adoptFrom', 'namespaceSelector', 'namespaces']);
  });
});

describe.each(ACCOUNTS.map((a) => [a.kind, a.plural]))('%s', (_k, plural) => {
  it('every field of the spec has a description (kubectl explain)', () => {
    const missing: string[] = [];
    const walk = (n: Node, path: string) => {
      if (!n.description) missing.push(path);
      for (const [k, v] of Object.entries(n.properties ?? {})) walk(v, `${path}.${k}`);
      if (n.items?.properties)
        for (const [k, v] of Object.entries(n.items.properties)) walk(v, `${path}[].${k}`);
    };
    walk(specOf(plural), 'spec');
    expect(missing).toEqual([]);
  });
});
