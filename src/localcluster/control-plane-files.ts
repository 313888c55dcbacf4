// What the control plane is started with: its PKI on disk, etcd's and kube-apiserver's flags,
// and the admin kubeconfig.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createPki } from './certs.ts';

type Pki = Awaited<ReturnType<typeof createPki>>;

/** A new CA, serving, admin and service-account key pairs, written into the cluster directory. */
export async function writePki(dir: string): Promise<Pki> {
  const pki = await createPki();
  const files = {
    'ca.crt': pki.ca.cert,
    'ca.key': pki.ca.key,
    'serving.crt': pki.serving.cert,
    'serving.key': pki.serving.key,
    'admin.crt': pki.admin.cert,
    'admin.key': pki.admin.key,
    'sa.pub': pki.serviceAccount.publicKey,
    'sa.key': pki.serviceAccount.privateKey,
  };
  for (const [name, content] of Object.entries(files))
    writeFileSync(join(dir, name), content, { mode: 0o600 });
  return pki;
}

export function etcdArgs(o: { dataDir: string; clientPort: number; peerPort: number }): string[] {
  const etcdUrl = `http://127.0.0.1:${o.clientPort}`;
  return [
    `--data-dir=${o.dataDir}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=http://127.0.0.1:${o.peerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${o.peerPort}`,
    `--initial-cluster=default=http://127.0.0.1:${o.peerPort}`,
    '--unsafe-no-fsync',
    '--log-level=warn',
  ];
}

export function apiserverArgs(o: {
  dir: string;
  etcdPort: number;
  apiPort: number;
  certDir: string;
  node: boolean;
}): string[] {
  const f = (n: string) => join(o.dir, n);
  return [
    `--etcd-servers=http://127.0.0.1:${o.etcdPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    '--endpoint-reconciler-type=none',
    `--secure-port=${o.apiPort}`,
    `--tls-cert-file=${f('serving.crt')}`,
    `--tls-private-key-file=${f('serving.key')}`,
    `--client-ca-file=${f('ca.crt')}`,
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${f('sa.pub')}`,
    `--service-account-signing-key-file=${f('sa.key')}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    '--allow-privileged=true',
    `--cert-dir=${o.certDir}`,
    // without a controller-manager no ServiceAccount exists for the admission plugin to find;
    // with a node, pods get their service account token (and the kubelet a client cert)
    ...(o.node
      ? [
          `--kubelet-client-certificate=${f('admin.crt')}`,
          `--kubelet-client-key=${f('admin.key')}`,
          // the node's address, never its name (no lookup leaves the machine)
          '--kubelet-preferred-address-types=InternalIP',
        ]
      : ['--disable-admission-plugins=ServiceAccount']),
  ];
}

/** The admin kubeconfig (client certificate), its path returned. */
export function writeKubeconfig(dir: string, server: string, pki: Pki): string {
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'local',
          cluster: { server, 'certificate-authority-data': Buffer.from(pki.ca.cert).toString('base64') },
        },
      ],
      users: [
        {
          name: 'admin',
          user: {
            'client-certificate-data': Buffer.from(pki.admin.cert).toString('base64'),
            'client-key-data': Buffer.from(pki.admin.key).toString('base64'),
          },
        },
      ],
      contexts: [{ name: 'local', context: { cluster: 'local', user: 'admin', namespace: 'default' } }],
      'current-context': 'local',
    }),
    { mode: 0o600 },
  );
  return kubeconfig;
}
