import { Command } from 'commander';

export function clusterCommand(): Command {
  const cmd = new Command('cluster').description(
    'A local kube-apiserver + etcd (and, with --node, a node) for tests and the demo (needs Go the first time)',
  );
  cmd
    .command('up')
    .description('start (or reuse) the local control plane and print its kubeconfig path')
    .option('--dir <dir>', 'state directory (default: .cache/cluster in the repository)')
    .option(
      '--node',
      'also a node: containerd, kubelet, kube-controller-manager and kube-scheduler (Linux, root), so pods run',
    )
    .action(async (o) => {
      // loaded when used: the operator and the other commands do not carry the control plane's code
      const { clusterUp } = await import('../../localcluster/cluster.ts');
      const s = await clusterUp({ dir: o.dir, node: !!o.node });
      process.stdout.write(`${s.kubeconfig}\n`);
      process.stderr.write(`  export KUBECONFIG=${s.kubeconfig}\n`);
      // where pods reach this machine's loopback ports (an emulator, say)
      if (s.node) process.stderr.write(`  pods reach this machine's loopback at ${s.node.gateway}\n`);
    });
  cmd
    .command('load')
    .description("put images from the Docker engine into the node's container runtime (after up --node)")
    .argument('<image...>', 'image names, as docker knows them (e.g. edge-operator:dev)')
    .option('--dir <dir>', 'state directory')
    .action(async (images: string[], o) => {
      const { loadIntoNode } = await import('../../localcluster/cluster.ts');
      await loadIntoNode(images, o.dir);
      process.stderr.write(`loaded ${images.join(', ')}\n`);
    });
  cmd
    .command('down')
    .description('stop the local control plane and remove its state')
    .option('--dir <dir>', 'state directory')
    .action(async (o) => {
      const { clusterDown } = await import('../../localcluster/cluster.ts');
      await clusterDown({ dir: o.dir });
    });
  return cmd;
}
