// The five GitOps checks, the same for Flux and Argo CD: each tool file supplies a Tool (how to
// start it, where it reads the repository, what it reports) and calls gitopsSuite.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { collect } from '../../src/api/client.ts';
import { isNotFound } from '../../src/api/errors.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { condition, waitFor } from '../support/operator.ts';
import {
  apiserverDelta,
  apiserverRequests,
  type Doc,
  type Edge,
  edge,
  filesOf,
  getObj,
  gitCommit,
  managedOf,
  operatorApiWrites,
  readiness,
  renderExamples,
  skipReason,
} from './harness.ts';

export interface ToolStatus {
  /** The tool reports the app healthy (and in sync) at this commit. */
  healthy: boolean;
  /** The tool reports the app failed/degraded at this commit. */
  failed: boolean;
  /** What the tool says, for assertions and failure messages. */
  message: string;
}

export interface Tool {
  name: string;
  /** The namespace the examples go to (their own, so the tools never share objects). */
  ns: string;
  /** The repository directory the tool syncs. */
  dir: string;
  /** Starts the tool's processes and points it at dir (the first commit is already there). */
  start(): Promise<void>;
  stop(): Promise<void>;
  status(sha: string): Promise<ToolStatus>;
  /** Changes with every sync the tool records (Argo CD: its sync history); '' when it keeps none. */
  syncs(): Promise<string>;
  /** Proof the tool looked at the app during an idle window (a number that grows as it does). */
  activity(): Promise<number>;
  /**
   * The tool's failure carries the object's own message (Argo CD: the resource's health
   * message). Flux's names the object and its kstatus ("status: 'Failed'") only: fluxcd/pkg/ssa's
   * wait reports no condition message.
   */
  failureCarriesMessage: boolean;
  /** Where the tool's logs are, for failure messages. */
  logs(): string;
}

const IDLE_MS = 20_000;

export function gitopsSuite(tool: Tool) {
  describe.skipIf(!!skipReason)(`${tool.name} drives the operator from Git`, () => {
    let e: Edge;
    let examples: Map<string, Doc[]>;
    let managed: Doc[];
    let head: string;
    const status = () => tool.status(head);
    /**
     * The tool's status between its own routine passes: Flux marks Ready Unknown ("Reconciliation
     * in progress") for the half second of each interval's pass, healthy again after it with
     * nothing changed; a reading inside that window says nothing about what the tool saw.
     */
    const settled = async (): Promise<ToolStatus> => {
      const until = Date.now() + 5_000;
      for (;;) {
        const s = await status();
        if (s.healthy || s.failed || Date.now() > until) return s;
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    const describeState = async () =>
      `${tool.name}: ${(await status()).message}; objects: ${(await readiness(e.kube, tool.ns, managed)).notReady.join(', ') || 'all Ready'}; logs in ${tool.logs()}`;
    const waitTool = (what: string, fn: (s: ToolStatus) => boolean, timeoutMs = 120_000) =>
      waitFor(
        what,
        async () => {
          const s = await status();
          if (fn(s)) return s;
          return undefined;
        },
        timeoutMs,
        500,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await describeState()}`);
      });

    beforeAll(async () => {
      examples = renderExamples(tool.ns);
      managed = managedOf(examples);
      head = gitCommit(`${tool.name}: deploy/examples`, filesOf(tool.dir, examples));
      e = await edge(tool.ns);
      await tool.start();
    });
    afterAll(async () => {
      await tool?.stop();
      await e?.close();
    });

    it('syncs every example, and reports healthy only once every object is Ready', async () => {
      // the operator is not running yet: the tool applies the objects and must wait for them
      await waitFor(
        'the tool to apply every example',
        async () => {
          for (const d of managed) if (!(await getObj(e.kube, tool.ns, d.kind, d.name))) return false;
          return true;
        },
        120_000,
        500,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await describeState()}`);
      });
      // longer than a Flux interval and an Argo CD resync: the tool has looked again meanwhile
      const until = Date.now() + 15_000;
      while (Date.now() < until) {
        const s = await status();
        expect(s.healthy, `${tool.name} reported healthy while no object was Ready: ${s.message}`).toBe(
          false,
        );
        await new Promise((r) => setTimeout(r, 500));
      }
      await e.startOperator();
      // from now on, whenever the tool says healthy every object must already be Ready
      await waitFor(
        `${tool.name} healthy`,
        async () => {
          const s = await status();
          if (!s.healthy) return false;
          const r = await readiness(e.kube, tool.ns, managed);
          expect(r.notReady, `${tool.name} reported healthy before every object was Ready`).toEqual([]);
          return true;
        },
        120_000,
        300,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await describeState()}`);
      });
      expect((await readiness(e.kube, tool.ns, managed)).allReady).toBe(true);
      // and the account holds them, once each
      expect(await collect(e.api.ipPolicies.list())).toHaveLength(1);
      expect(await collect(e.api.httpsEdges.list())).toHaveLength(1);
    });

    it('reports a spec the API refuses as failed, with the operator message, and recovers once Git is fixed', async () => {
      const file = '10-ip-policies.yaml';
      const original = examples.get(file)!;
      const broken = original.map((d) => {
        if (d.kind !== 'IPRestriction' || d.name !== 'dashboard') return d;
        // admission takes it (an id of the right shape); the API refuses it: no such policy
        const o = parse(d.text) as { spec: Record<string, unknown> };
        delete o.spec.ipPolicyRefs;
        o.spec.ipPolicyIDs = ['ipp_doesnotexist'];
        return { ...d, text: stringify(o) };
      });
      const brokenText = broken.find((d) => d.name === 'dashboard')!.text;
      expect(brokenText).toContain('ipp_doesnotexist');
      head = gitCommit(`${tool.name}: a restriction naming a policy that does not exist`, {
        [`${tool.dir}/${file}`]: broken.map((d) => d.text).join('---\n'),
      });
      const failed = await waitTool(`${tool.name} to report the broken object`, (s) => s.failed);
      const obj = (await getObj(e.kube, tool.ns, 'IPRestriction', 'dashboard')) as KubeObject;
      const stalled = condition(obj, 'Stalled');
      expect(stalled?.status).toBe('True');
      expect(stalled?.reason).toBe('APIRejected');
      expect(stalled?.message).toContain('ipp_doesnotexist');
      expect(failed.message).toContain(
        tool.failureCarriesMessage ? stalled!.message : `IPRestriction/${tool.ns}/dashboard`,
      );

      head = gitCommit(`${tool.name}: the restriction uses the policy again`, {
        [`${tool.dir}/${file}`]: original.map((d) => d.text).join('---\n'),
      });
      await waitTool(`${tool.name} healthy after the fix`, (s) => s.healthy);
      expect((await readiness(e.kube, tool.ns, managed)).allReady).toBe(true);
    });

    it('stays idle once converged: no re-apply, no operator writes', async () => {
      await waitTool(`${tool.name} healthy`, (s) => s.healthy);
      // let the last status writes and events of the fix settle
      await new Promise((r) => setTimeout(r, 5000));
      const before = {
        apiserver: await apiserverRequests(e.kube),
        syncs: await tool.syncs(),
        activity: await tool.activity(),
        opWrites: await operatorApiWrites(e.op!),
      };
      await new Promise((r) => setTimeout(r, IDLE_MS));
      const delta = apiserverDelta(await apiserverRequests(e.kube), before.apiserver);
      expect(delta.writes, 'writes to edge.tunnel.dev objects while idle').toEqual({});
      expect(await tool.syncs(), `${tool.name} synced again while idle`).toBe(before.syncs);
      expect(await operatorApiWrites(e.op!), 'operator API writes while idle').toBe(before.opWrites);
      // the tool did look meanwhile: the silence above is its decision, not its absence
      expect(await tool.activity()).toBeGreaterThan(before.activity);
      const idle = await settled();
      expect(idle.healthy, idle.message).toBe(true);
    });

    it('prunes a route and the backend it uses, removed in one commit: nothing left, nothing Terminating', async () => {
      const route = (await getObj(e.kube, tool.ns, 'HTTPSEdgeRoute', 'app-root')) as KubeObject;
      const backend = (await getObj(e.kube, tool.ns, 'WeightedBackend', 'web-split')) as KubeObject;
      const routeId = route.status!.id as string;
      const backendId = backend.status!.id as string;
      const edgeId = (await getObj(e.kube, tool.ns, 'HTTPSEdge', 'app'))!.status!.id as string;
      expect(routeId).toBeTruthy();
      expect(backendId).toBeTruthy();
      for (const [file, drop] of [
        ['40-edges.yaml', 'app-root'],
        ['20-backends.yaml', 'web-split'],
      ] as const)
        examples.set(
          file,
          examples.get(file)!.filter((d) => d.name !== drop),
        );
      managed = managedOf(examples);
      head = gitCommit(`${tool.name}: remove the root route and its split backend`, {
        [`${tool.dir}/40-edges.yaml`]: examples
          .get('40-edges.yaml')!
          .map((d) => d.text)
          .join('---\n'),
        [`${tool.dir}/20-backends.yaml`]: examples
          .get('20-backends.yaml')!
          .map((d) => d.text)
          .join('---\n'),
      });
      await waitFor(
        'both objects gone from the cluster',
        async () =>
          !(await getObj(e.kube, tool.ns, 'HTTPSEdgeRoute', 'app-root')) &&
          !(await getObj(e.kube, tool.ns, 'WeightedBackend', 'web-split')),
        120_000,
        500,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await describeState()}`);
      });
      await waitTool(`${tool.name} healthy after the prune`, (s) => s.healthy);
      // nothing left remotely
      expect((await e.api.httpsEdges.get(edgeId)).routes.map((r) => r.id)).not.toContain(routeId);
      expect(await e.api.httpsEdgeRoutes.get(edgeId, routeId).catch((err: unknown) => err)).toSatisfy(
        isNotFound,
      );
      expect((await collect(e.api.weightedBackends.list())).map((b) => b.id)).not.toContain(backendId);
      // and nothing stuck deleting
      for (const d of managed) {
        const o = await getObj(e.kube, tool.ns, d.kind, d.name);
        expect(o?.metadata.deletionTimestamp, `${d.kind}/${d.name}`).toBeUndefined();
      }
      expect((await readiness(e.kube, tool.ns, managed)).allReady).toBe(true);
    });

    it('puts back an out-of-band change in the account without the tool seeing a diff', async () => {
      const policy = (await getObj(e.kube, tool.ns, 'IPPolicy', 'corp')) as KubeObject;
      const id = policy.status!.id as string;
      const want = (policy.spec as { description: string }).description;
      await waitTool(`${tool.name} healthy`, (s) => s.healthy);
      const before = { apiserver: await apiserverRequests(e.kube), syncs: await tool.syncs() };
      // someone edits the policy in the account, behind the cluster's back
      await e.api.ipPolicies.update(id, { description: 'edited in the dashboard' });
      const until = Date.now() + 60_000;
      for (;;) {
        const s = await settled();
        expect(s.healthy, `${tool.name} noticed: ${s.message}`).toBe(true);
        if ((await e.api.ipPolicies.get(id)).description === want) break;
        if (Date.now() > until)
          throw new Error(`the operator did not put the description back\n${await describeState()}`);
        await new Promise((r) => setTimeout(r, 500));
      }
      // a little longer: a tool reacting late would show here
      await new Promise((r) => setTimeout(r, 12_000));
      const after = await settled();
      expect(after.healthy, `${tool.name} noticed: ${after.message}`).toBe(true);
      expect(await tool.syncs(), `${tool.name} synced`).toBe(before.syncs);
      const { writes } = apiserverDelta(await apiserverRequests(e.kube), before.apiserver);
      // the tools write objects themselves (apply): none of those; the operator's status
      // writes go to the status subresource
      expect(
        Object.keys(writes).filter((k) => !k.includes('/')),
        `${tool.name} (or someone) wrote edge objects`,
      ).toEqual([]);
    });
  });
}
