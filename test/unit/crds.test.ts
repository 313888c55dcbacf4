import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CHART_KINDS, renderChartKinds } from '../../src/operator/kinds/chart-kinds.ts';
import { CRD_COPIES, CRD_DIR, renderCrds } from '../../src/operator/kinds/generate-crds.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';

describe('crds/', () => {
  const files = renderCrds();

  it.each(BINDINGS.map((b) => [b.kind, b]))(
    'every field of %s has a description (kubectl explain)',
    (_k, b) => {
      const crd = parse(files.get(`${b.plural}.edge.tunnel.dev.yaml`)!);
      const missing: string[] = [];
      type Node = { description?: string; properties?: Record<string, Node>; items?: Node };
      const walk = (n: Node, path: string) => {
        if (!n.description) missing.push(path);
        for (const [k, v] of Object.entries(n.properties ?? {})) walk(v, `${path}.${k}`);
        // a list's items are described by the list, unless they are objects with fields
        if (n.items?.properties)
          for (const [k, v] of Object.entries(n.items.properties)) walk(v, `${path}[].${k}`);
      };
      walk(crd.spec.versions[0].schema.openAPIV3Schema.properties.spec, 'spec');
      expect(missing).toEqual([]);
    },
  );
  it.each([CRD_DIR, ...CRD_COPIES])(
    '%s is what `npm run crds` generates (run it after changing a binding)',
    (dir) => {
      expect(
        readdirSync(dir)
          .filter((f) => f !== 'kustomization.yaml')
          .sort(),
      ).toEqual([...files.keys()].sort());
      for (const [f, s] of files) expect(readFileSync(join(dir, f), 'utf8'), f).toBe(s);
    },
  );

  it("the chart's kind lists (RBAC, drain hook) are what `npm run crds` generates from the bindings", () => {
    const tpl = readFileSync(CHART_KINDS, 'utf8');
    expect(tpl).toBe(renderChartKinds());
    // every binding's plural is in them, so a new kind is in the operator's RBAC and the drain hook
    for (const b of BINDINGS)
      expect(tpl.match(new RegExp(`\\b${b.plural}\\b(?!/)`, 'g'))?.length, b.plural).toBe(2);
  });

  it.each(BINDINGS.map((b) => [b.kind, b]))(
    '%s has the status subresource, printer columns, category edge and a finalizer-safe schema',
    (_k, b) => {
      const crd = parse(files.get(`${b.plural}.edge.tunnel.dev.yaml`)!);
      const v = crd.spec.versions[0];
      expect(crd.spec.names.categories).toEqual(['edge']);
      expect(crd.spec.names.shortNames.length).toBeGreaterThan(0);
      // a short name is no second spelling of the singular, and takes none that other
      // well-known kinds use (OpenShift's Route is `route`)
      for (const short of crd.spec.names.shortNames) {
        expect(short).not.toBe(crd.spec.names.singular);
        expect(['route', 'ing', 'svc', 'cert', 'gw', 'edge']).not.toContain(short);
      }
      expect(v.subresources).toEqual({ status: {} });
      expect(v.additionalPrinterColumns.map((c: { name: string }) => c.name)).toEqual(
        expect.arrayContaining(['ID', 'Ready', 'Age']),
      );
      const spec = v.schema.openAPIV3Schema.properties.spec;
      expect(spec.properties.deletionPolicy.enum).toEqual(['Delete', 'Retain']);
      expect(spec.properties.description['x-kubernetes-validations'][0].rule).toBe(
        'bytes(self).size() <= 255',
      );
      expect(JSON.stringify(v.schema)).not.toContain('additionalProperties":false');
      expect(v.schema.openAPIV3Schema.properties.status.properties.id.type).toBe('string');
    },
  );
});
