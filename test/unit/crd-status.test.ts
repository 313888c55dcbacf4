// Every status field of every CRD says what it is: `kubectl explain <kind>.status...` is how
// users learn what the operator reports. Read from the generated files in crds/ (what a
// cluster gets), the managed kinds and the account kinds alike.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CRD_DIR } from '../../src/operator/kinds/generate-crds.ts';

type Node = {
  description?: string;
  properties?: Record<string, Node>;
  items?: Node;
  additionalProperties?: Node | boolean;
  anyOf?: Node[];
  oneOf?: Node[];
  allOf?: Node[];
};

/** The paths of the properties under `n`, at any depth, that have no description. */
function undescribed(n: Node, path: string): string[] {
  const missing: string[] = [];
  const walk = (x: Node, at: string) => {
    for (const [k, v] of Object.entries(x.properties ?? {})) {
      if (!v.description?.trim()) missing.push(`${at}.${k}`);
      walk(v, `${at}.${k}`);
    }
    if (x.items) walk(x.items, `${at}[]`);
    if (x.additionalProperties && typeof x.additionalProperties === 'object')
      walk(x.additionalProperties, `${at}{}`);
    for (const alt of [...(x.anyOf ?? []), ...(x.oneOf ?? []), ...(x.allOf ?? [])]) walk(alt, at);
  };
  if (!n.description?.trim()) missing.push(path);
  walk(n, path);
  return missing;
}

const files = readdirSync(CRD_DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');

describe('CRD status fields', () => {
  it('crds/ holds the CRDs', () => expect(files.length).toBeGreaterThanOrEqual(12));

  it.each(files)('every status field of %s has a description (kubectl explain)', (f) => {
    const crd = parse(readFileSync(join(CRD_DIR, f), 'utf8'));
    for (const v of crd.spec.versions) {
      const status = v.schema.openAPIV3Schema.properties.status as Node | undefined;
      expect(status, `${f} ${v.name}: no status schema`).toBeDefined();
      expect(undescribed(status!, `${crd.spec.names.kind}.status`)).toEqual([]);
    }
  });

  it('finds a field without a description at any depth', () => {
    const schema: Node = {
      description: 'observed state',
      properties: {
        a: { description: 'a' },
        list: {
          description: 'a list',
          items: { properties: { id: {}, deep: { description: 'd', properties: { x: {} } } } },
        },
        map: { description: 'a map', additionalProperties: { properties: { y: { description: ' ' } } } },
      },
    };
    expect(undescribed(schema, 'status')).toEqual([
      'status.list[].id',
      'status.list[].deep.x',
      'status.map{}.y',
    ]);
    expect(undescribed({}, 'status')).toEqual(['status']);
  });
});
