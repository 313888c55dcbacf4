import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { CLUSTER_ID } from '../../operator/settings/table.ts';
import { explain } from '../agent-commands.ts';
import { clientFrom, withApiOptions } from '../api-options.ts';
import { CliError, type CliIO, EXIT } from '../io.ts';

export function exportCommand(io: CliIO): Command {
  return withApiOptions(
    new Command('export')
      .description(
        'write the custom resources that adopt the resources already in the account (references as object names, secrets as Secret references)',
      )
      .addOption(
        new Option(
          '-n, --namespace <ns>',
          "namespace written into every object (with --owned-by: each owner marker's by default)",
        ),
      )
      .addOption(
        new Option(
          '--owned-by <cluster-id>',
          'export what the installation with this cluster id manages, not what none does, under the names and namespaces of its objects (their owner markers): applied where the operator runs with that cluster id, they adopt their resources (a lost cluster rebuilt, an uninstall that kept them)',
        ),
      )
      .addOption(new Option('--kinds <kinds>', 'comma-separated kinds to write (default: all)'))
      .addOption(new Option('--output-dir <dir>', 'write one file per kind and a kustomization.yaml here'))
      .addOption(new Option('-o, --output <format>', 'yaml: everything to standard output').choices(['yaml']))
      .addOption(
        new Option(
          '--observe',
          'objects that only observe their resource (managementPolicy: Observe): they report drift and never write to the account',
        ),
      )
      .addOption(
        new Option(
          '--account <Kind/name>',
          'the account object the objects name in spec.accountRef (EdgeAccount/<name> or ClusterEdgeAccount/<name>): the one holding the key exported from',
        ),
      )
      .addOption(
        new Option(
          '--include-secrets',
          'also write Secret manifests with the secret values the API returns (plain text: encrypt before committing)',
        ),
      ),
  ).action(async (o) => {
    if (o.outputDir && o.output)
      throw new CliError('--output-dir and -o yaml exclude each other', EXIT.usage);
    // what kubectl would refuse at apply, refused here (a namespace is a DNS label)
    if (o.namespace !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(o.namespace))
      throw new CliError(
        `-n: "${o.namespace}" is not a namespace name (lower-case letters, digits and '-', at most 63)`,
        EXIT.usage,
      );
    // the rule of the operator's --cluster-id: what an owner marker can hold
    if (o.ownedBy !== undefined && !CLUSTER_ID.test(o.ownedBy))
      throw new CliError(
        `--owned-by: ${JSON.stringify(o.ownedBy)} is not a cluster id (printable ASCII without spaces, at most 63 characters: the chart's clusterId, or the uid of kube-system)`,
        EXIT.usage,
      );
    const { exportAccount, exportFiles, KIND_FILES, parseAccountRef, toYaml } = await import(
      '../../operator/export.ts'
    );
    let account: ReturnType<typeof parseAccountRef>;
    try {
      account = o.account ? parseAccountRef(String(o.account)) : undefined;
    } catch (e) {
      throw new CliError((e as Error).message, EXIT.usage);
    }
    // encrypted since the last export (SOPS): plain text must not take its place (asked before any request)
    const secretsFile = o.outputDir ? join(o.outputDir as string, 'secrets.yaml') : undefined;
    if (
      o.includeSecrets &&
      secretsFile &&
      existsSync(secretsFile) &&
      /^sops:/m.test(readFileSync(secretsFile, 'utf8'))
    )
      throw new CliError(
        `${secretsFile} is encrypted (SOPS): not overwriting it with plain-text secrets (move it away, or export without --include-secrets)`,
        EXIT.usage,
      );
    const api = clientFrom(o);
    const kinds = o.kinds
      ? String(o.kinds)
          .split(',')
          .map((k: string) => k.trim())
      : undefined;
    const result = await exportAccount(api, {
      namespace: o.namespace,
      ownedBy: o.ownedBy,
      kinds,
      includeSecrets: !!o.includeSecrets,
      observe: !!o.observe,
      account,
      progress: (line) => io.err(`export: ${line}\n`),
    }).catch((e) => {
      if (e instanceof Error && e.message.startsWith('unknown kind'))
        throw new CliError(e.message, EXIT.usage);
      throw explain(e, 'export');
    });
    await api.close();
    if (o.outputDir) {
      const dir = o.outputDir as string;
      mkdirSync(dir, { recursive: true });
      const hadSecrets = existsSync(secretsFile!);
      // a Secrets file kept from before stays listed: a GitOps tool would prune its Secrets
      const files = exportFiles(result, hadSecrets && !result.secrets.length ? ['secrets.yaml'] : []);
      // a re-export replaces the previous one: its files of kinds now empty go too, nothing else
      for (const f of readdirSync(dir)) if (KIND_FILES.has(f) && !files.has(f)) rmSync(join(dir, f));
      for (const [f, text] of files) {
        if (f !== 'secrets.yaml') {
          writeFileSync(join(dir, f), text, { mode: 0o644 });
          continue;
        }
        // readable by its owner alone, whatever mode a file there had
        const tmp = join(dir, `.secrets.yaml.${process.pid}.tmp`);
        writeFileSync(tmp, text, { mode: 0o600 });
        renameSync(tmp, secretsFile!);
      }
      io.err(`export: wrote ${result.objects.length} objects to ${dir} (${[...files.keys()].join(', ')})\n`);
    } else {
      io.out(toYaml([...result.secrets, ...result.objects]));
    }
    if (result.skipped.length) {
      io.err(
        `export: skipped ${result.skipped.length} resources managed by an installation of the operator:\n${result.skipped
          .map((s) => `  ${s.kind} ${s.id} (cluster ${s.cluster}, ${s.object})\n`)
          .join('')}`,
      );
    }
    if (result.refused.length)
      io.err(
        `export: warning: ${result.refused.length} objects exceed what the CRDs admit (their bounds are below the API's in places), and kubectl apply will refuse them until edited:\n${result.refused
          .map((r) => `  ${r.kind} ${r.name}: ${r.problem}\n`)
          .join('')}`,
      );
    if (result.secretNames.length && !o.includeSecrets) {
      io.err(
        `export: warning: these Secrets are referenced but not written (no secret value is): ${result.secretNames.join(', ')}. ` +
          'Create them with the values in use (or export with --include-secrets); until they exist those objects wait (WaitingForSecret) and the remote values stay as they are.\n',
      );
    }
    if (result.secrets.length)
      io.err(
        'export: warning: the Secrets hold secret values in plain text: encrypt them before committing (SOPS, Sealed Secrets)\n',
      );
  });
}
