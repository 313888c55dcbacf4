// What an informer caches of an object: the object as the API server sent it, without its
// managedFields and kubectl's last-applied annotation, nothing else changed (the engine compares
// status with what it last wrote).
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { leanObject } from '../../src/operator/runtime/kube/lean-object.ts';

const fromServer = (): KubeObject =>
  JSON.parse(
    JSON.stringify({
      apiVersion: 'edge.tunnel.dev/v1alpha1',
      kind: 'HTTPSEdge',
      metadata: {
        name: 'shop',
        namespace: 'team-a',
        uid: 'u-1',
        resourceVersion: '42',
        generation: 2,
        managedFields: [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': {} } }],
        finalizers: ['edge.tunnel.dev/finalizer'],
        annotations: { 'edge.tunnel.dev/id': 'edghts_1' },
      },
      spec: { hostports: ['shop.example.com:443'] },
      status: {
        id: 'edghts_1',
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: '2026-11-26T06:39:02Z', message: '' },
        ],
      },
    }),
  );

describe('the object an informer caches', () => {
  it('is the object without managedFields, in the same key order', () => {
    const want = fromServer();
    delete (want.metadata as { managedFields?: unknown }).managedFields;
    const got = leanObject(fromServer());
    expect(got).toStrictEqual(want);
    expect(Object.keys(got.metadata)).toEqual(Object.keys(want.metadata));
  });

  it('adds no field an object does not have (a condition without a reason stays without)', () => {
    const got = leanObject(fromServer());
    expect(Object.keys((got.status as { conditions: object[] }).conditions[0]!)).not.toContain('reason');
  });

  it("drops kubectl's last-applied annotation (a copy of the object as applied) and keeps the others", () => {
    const o = fromServer();
    const applied = JSON.stringify({ apiVersion: o.apiVersion, kind: o.kind, spec: o.spec });
    o.metadata.annotations = {
      'edge.tunnel.dev/id': 'edghts_1',
      'kubectl.kubernetes.io/last-applied-configuration': applied,
      'team.example.com/owner': 'shop',
    };
    expect(leanObject(o).metadata.annotations).toStrictEqual({
      'edge.tunnel.dev/id': 'edghts_1',
      'team.example.com/owner': 'shop',
    });
  });

  it('takes an object without metadata fields it shares (a metadata-only list item)', () => {
    const o = { metadata: { name: 'key', managedFields: [] } } as unknown as KubeObject;
    expect(leanObject(o)).toStrictEqual({ metadata: { name: 'key' } });
  });
});
