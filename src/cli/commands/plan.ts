import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../operator/runtime/kube/kube.ts';
import { CLUSTER_ID } from '../../operator/settings/table.ts';
import { clientFrom, withApiOptions } from '../api-options.ts';
import { CliError, type CliIO, EXIT } from '../io.ts';
import { kubeFrom, withKubeOptions } from '../kube-options.ts';
import { usageExit } from '../program.ts';

/** Kinds the files may hold without a namespace of their own that is not `-n`'s. */
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterEdgeAccount', 'CustomResourceDefinition']);

/** A file's documents (YAML, several per file; JSON is YAML), a `List`'s items one by one. */
function documentsOf(file: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const d of parseAllDocuments(readFileSync(file, 'utf8'))) {
    if (d.errors.length) throw new CliError(`${file}: ${d.errors[0]!.message.split('\n')[0]}`, EXIT.failed);
    const v = d.toJS() as KubeObject | null;
    if (!v || typeof v !== 'object') continue;
    if (v.kind === 'List' && Array.isArray(v.items)) out.push(...(v.items as KubeObject[]));
    else if (v.metadata?.name) out.push(v);
    else
      throw new CliError(
        `${file}: ${v.kind ? `a ${v.kind}` : 'a document'} without metadata.name`,
        EXIT.failed,
      );
  }
  return out;
}

/** The objects of files and directories (their *.yaml, *.yml and *.json), each namespaced one in a namespace. */
export function readPlanFiles(paths: string[], namespace: string): KubeObject[] {
  const files = paths.flatMap((p) => {
    let dir: boolean;
    try {
      dir = statSync(p).isDirectory();
    } catch {
      throw new CliError(`-f ${p}: no such file or directory`, EXIT.failed);
    }
    return dir
      ? readdirSync(p)
          .filter((f) => /\.(ya?ml|json)$/.test(f))
          .sort()
          .map((f) => join(p, f))
      : [p];
  });
  return files
    .flatMap(documentsOf)
    .map((o) =>
      CLUSTER_SCOPED.has(o.kind ?? '') || o.metadata.namespace
        ? o
        : { ...o, metadata: { ...o.metadata, namespace } },
    );
}

const list = (v: string | undefined) =>
  String(v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function planCommand(io: CliIO): Command {
  const cmd = withApiOptions(
    withKubeOptions(
      new Command('plan')
        .description(
          "show what the operator would do with the custom resources of some files, against the live cluster and account, read-only (GET and LIST only): create (with the body it would send), update (field: was -> will be), adopt, delete (an object being deleted), nothing, or refuse (the Stalled reason it would get). Exit 0: nothing to do; 2: changes; 1: anything refused, waiting or unknown (and any error, usage errors included). The installation's account uses --api-url and its key; an EdgeAccount or ClusterEdgeAccount's key is read from its Secret with your own Kubernetes rights",
        )
        .addOption(
          new Option(
            '-f, --filename <path>',
            'a file or directory (*.yaml, *.yml, *.json) of custom resources; repeatable',
          )
            .argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v])
            .makeOptionMandatory(),
        )
        .addOption(
          new Option('-n, --namespace <ns>', 'namespace of objects that name none').default('default'),
        )
        .addOption(
          new Option('-o, --output <format>', 'text or json').choices(['text', 'json']).default('text'),
        )
        .addOption(
          new Option(
            '--cluster-id <id>',
            "the operator's --cluster-id (default: the uid of kube-system, as the operator's)",
          ).env('EDGE_CLUSTER_ID'),
        )
        .addOption(
          new Option(
            '--operator-namespace <ns>',
            "the operator's namespace: a ClusterEdgeAccount's key Secret by default, and its digest key",
          )
            .env('EDGE_OPERATOR_NAMESPACE')
            .default('edge-system'),
        )
        .addOption(new Option('--adopt-from <list>', "the operator's --adopt-from").env('EDGE_ADOPT_FROM'))
        .addOption(
          new Option('--shared-namespaces <list>', "the operator's --shared-namespaces").env(
            'EDGE_SHARED_NAMESPACES',
          ),
        )
        .addOption(
          new Option('--default-account <bool>', "the operator's --default-account")
            .choices(['true', 'false'])
            .env('EDGE_DEFAULT_ACCOUNT')
            .default('true'),
        ),
    ),
  ).action(async (o) => {
    const code = await run(io, o).catch((err) => {
      // exit 2 means changes here: any usage error exits 1, as every other failure
      if (err instanceof CliError && err.code === EXIT.usage) throw new CliError(err.message, EXIT.failed);
      throw err;
    });
    // the plan says it all: no message of its own
    if (code !== EXIT.ok) throw new CliError('', code);
  });
  return usageExit(cmd, EXIT.failed);
}

async function run(io: CliIO, o: Record<string, string | string[] | undefined>): Promise<number> {
  if (o.clusterId !== undefined && !CLUSTER_ID.test(String(o.clusterId)))
    throw new CliError(`--cluster-id: ${JSON.stringify(o.clusterId)} is not a cluster id`, EXIT.usage);
  if (!/^[1-9]\d{0,8}$/.test(String(o.apiRateLimit)))
    throw new CliError(`--api-rate-limit: "${o.apiRateLimit}" is not a whole number > 0`, EXIT.usage);
  const objects = readPlanFiles(o.filename as string[], String(o.namespace));
  const [{ preview }, out] = await Promise.all([
    import('../../operator/preview.ts'),
    import('../plan-output.ts'),
  ]);
  const kube = await kubeFrom(o as { kubeconfig?: string; context?: string });
  const result = await preview({
    kube,
    objects,
    clusterId: o.clusterId as string | undefined,
    sharedNamespaces: list(o.sharedNamespaces as string | undefined),
    installation: {
      enabled: o.defaultAccount !== 'false',
      adoptFrom: list(o.adoptFrom as string | undefined),
      namespace: String(o.operatorNamespace),
      url: o.apiUrl as string | undefined,
      perMinute: Number(o.apiRateLimit ?? 120),
      client: () => clientFrom(o as Parameters<typeof clientFrom>[0]),
    },
  });
  if (o.output === 'json') io.out(out.renderPlanJson(result.entries, result.notes));
  else {
    for (const n of result.notes) io.err(`plan: note: ${n}\n`);
    io.out(out.renderPlan(result.entries));
  }
  const { exitCodeOf } = await import('../../operator/preview-entry.ts');
  return exitCodeOf(result.entries);
}
