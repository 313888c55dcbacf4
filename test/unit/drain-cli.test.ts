import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/io.ts';
import { runCli } from '../../src/cli/run-cli.ts';
import { accountOfObject, parseDeploymentRef } from '../../src/operator/drain.ts';
import { capturedIO } from '../support/cli-io.ts';
import { unreachableKubeconfig } from '../support/scratch.ts';

async function drain(
  args: string[],
  kubeconfig = '/nonexistent/kubeconfig',
): Promise<{ code: number; err: string }> {
  const io = capturedIO();
  // a kubeconfig that does not exist: a refusal must come before it is read
  const code = await runCli(['drain', '--kubeconfig', kubeconfig, ...args], io);
  return { code, err: io.errText() };
}

describe('edgectl drain --stop-deployment', () => {
  it('takes namespace/name', () => {
    expect(parseDeploymentRef('edge-system/edge-operator')).toEqual({
      namespace: 'edge-system',
      name: 'edge-operator',
    });
    expect(parseDeploymentRef('ns/eo.v2')).toEqual({ namespace: 'ns', name: 'eo.v2' });
    for (const bad of [
      'edge-operator',
      '/eo',
      'ns/',
      'ns/eo/x',
      'NS/eo',
      'ns/Eo',
      ' ns/eo',
      'ns/eo\n',
      'a.b/eo',
    ])
      expect(parseDeploymentRef(bad), bad).toBeUndefined();
  });

  it.each([
    [
      ['--policy', 'Orphan', '--stop-deployment', 'edge-operator'],
      'error: --stop-deployment: "edge-operator" is not namespace/name\n',
    ],
    [['--policy', 'Forget'], 'error: --policy: "Forget" is not one of Orphan, Retain, Delete\n'],
  ])('%j is refused with one line and exit 2', async (args, message) => {
    const r = await drain(args);
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toBe(message);
  });
});

describe('edgectl drain --account', () => {
  it('takes what status.account shows, and refuses anything else with one line and exit 2', async () => {
    const r = await drain(['--policy', 'Retain', '--account', 'EdgeAccount/team-a']);
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toBe(
      'error: --account: "EdgeAccount/team-a" is not installation, EdgeAccount/<namespace>/<name> or ClusterEdgeAccount/<name>\n',
    );
  });

  it('an object is of the account holding its resource, else of the one its spec names', () => {
    const o = (spec: Record<string, unknown>, status?: Record<string, unknown>) => ({
      metadata: { name: 'x', namespace: 'team' },
      spec,
      status,
    });
    expect(accountOfObject(o({}, { id: 'ipp_1', account: 'ClusterEdgeAccount/s' }))).toBe(
      'ClusterEdgeAccount/s',
    );
    expect(accountOfObject(o({}, { id: 'ipp_1' }))).toBe('installation');
    expect(accountOfObject(o({ accountRef: { kind: 'EdgeAccount', name: 'a' } }))).toBe('EdgeAccount/team/a');
    expect(accountOfObject(o({}))).toBeUndefined();
  });
});

describe('edgectl drain with the API server out of reach', () => {
  it('tries again until --timeout, then gives up with one line naming what failed and exit 1', async () => {
    // port 1 on loopback: nothing listens, every connection is refused at once
    const kubeconfig = unreachableKubeconfig('drain-');
    const t0 = Date.now();
    const r = await drain(['--policy', 'Retain', '--timeout', '1'], kubeconfig);
    expect(r.code).toBe(EXIT.failed);
    expect(Date.now() - t0).toBeLessThan(5000);
    const last = r.err.trim().split('\n').at(-1)!;
    expect(last).toMatch(
      /^error: list ippolicies: .*ECONNREFUSED.*; given up when the time allowed ran out$/,
    );
  });
});
