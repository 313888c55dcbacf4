import { Command, Option } from 'commander';
import { collect } from '../../api/client.ts';
import type { KubeList } from '../../operator/runtime/kube/kube.ts';
import { clientFrom, withApiOptions } from '../api-options.ts';
import { CliError, type CliIO, EXIT } from '../io.ts';
import { kubeFrom, withKubeOptions } from '../kube-options.ts';
import type { TraceTunnel } from '../trace-tree.ts';

const SECRETS = { group: '', version: 'v1', plural: 'secrets' };

export function traceCommand(io: CliIO): Command {
  return withApiOptions(
    withKubeOptions(
      new Command('trace')
        .description(
          'show an edge, route or any edge.tunnel.dev object with what it uses (routes, backends, online tunnels, IP policies and rules, Secrets) and whether each is Ready; exit 0 when all are, 1 when anything is not Ready or missing, 4 when the object does not exist. With --api-url and a key, tunnels are the live list; else what status shows',
        )
        .argument('<kind/name>', 'e.g. HTTPSEdge/app, edgeroute/app-root, wb/web-split')
        .addOption(new Option('-n, --namespace <ns>', 'namespace of the object').default('default')),
    ).addOption(
      new Option('-o, --output <format>', 'tree or json').choices(['tree', 'json']).default('tree'),
    ),
  ).action(async (target: string, o) => {
    const [{ BINDINGS }, tree, { KubeError, isKubeNotFound, resourceUrl }, { managedResource }] =
      await Promise.all([
        import('../../operator/kinds/index.ts'),
        import('../trace-tree.ts'),
        import('../../operator/runtime/kube/kube.ts'),
        import('../../operator/runtime/constants.ts'),
      ]);
    const { binding, name } = tree.parseTarget(target, BINDINGS);
    const ns = o.namespace as string;
    // credentials first: a half-configured API is a usage error before any cluster read
    const api = o.apiUrl ? clientFrom(o) : undefined;
    const kube = await kubeFrom(o);

    // every kind once, in the namespace (a kind whose CRD is not installed has no objects)
    const listAll = async (plural: string) => {
      const items: KubeList['items'] = [];
      let cont: string | undefined;
      do {
        const page = await kube
          .list(managedResource(plural), ns, { limit: 500, continue: cont })
          .catch((e): KubeList => {
            if (isKubeNotFound(e)) return { metadata: { resourceVersion: '' }, items: [] };
            throw e;
          });
        items.push(...page.items);
        cont = page.metadata.continue || undefined;
      } while (cont);
      return items;
    };
    const objects = Object.fromEntries(
      await Promise.all(BINDINGS.map(async (b) => [b.kind, await listAll(b.plural)] as const)),
    );
    if (!objects[binding.kind]?.some((x) => x.metadata.name === name))
      throw new CliError(`${binding.kind} "${name}" not found in namespace ${ns}`, EXIT.notFound);

    let tunnels: TraceTunnel[] | undefined;
    if (api) {
      try {
        tunnels = (await collect(api.tunnels.list())).map((t) => ({
          id: t.id,
          region: t.region,
          backends: t.backends,
          startedAt: t.started_at,
        }));
      } catch (e) {
        io.err(`trace: warning: cannot list online tunnels (${(e as Error).message}): showing status\n`);
      } finally {
        await api.close();
      }
    }

    const input = { bindings: BINDINGS, namespace: ns, objects, secrets: {}, tunnels, now: io.now() };
    // Secrets by name, metadata only: whether each exists, never a value
    const secrets: Record<string, string> = {};
    for (const s of tree.secretNamesOf(tree.buildTrace(input, binding.kind, name)!)) {
      secrets[s] = await kube
        .request('GET', resourceUrl(SECRETS, ns, s), {
          accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json',
        })
        .then(
          () => 'Exists',
          (e) => {
            if (isKubeNotFound(e)) return 'NotFound';
            if (e instanceof KubeError && e.status === 403) return 'Forbidden';
            throw e;
          },
        );
    }
    const root = tree.buildTrace({ ...input, secrets }, binding.kind, name)!;
    io.out(
      o.output === 'json'
        ? tree.renderJson(root)
        : tree.renderTree(root, { tty: io.isTTY, colour: !io.env.NO_COLOR }),
    );
    const code = tree.traceExit(root);
    // the tree says what is wrong: no message of its own
    if (code !== EXIT.ok) throw new CliError('', code);
  });
}
