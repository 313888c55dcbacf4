// The PKI a local kube-apiserver needs: one CA, a serving certificate for loopback, an
// admin client certificate (O=system:masters) and the service-account key pair.
import { webcrypto } from 'node:crypto';
import { newKeys, RSA_SHA256, serial, x509 } from '../util/x509.ts';

export interface Pem {
  cert: string;
  key: string;
}
export interface ClusterPki {
  ca: Pem;
  serving: Pem;
  admin: Pem;
  serviceAccount: { publicKey: string; privateKey: string };
}

const toPem = async (key: webcrypto.CryptoKey, type: 'pkcs8' | 'spki') => {
  const der = Buffer.from(await webcrypto.subtle.exportKey(type, key));
  const label = type === 'pkcs8' ? 'PRIVATE KEY' : 'PUBLIC KEY';
  return `-----BEGIN ${label}-----\n${der
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n')}\n-----END ${label}-----\n`;
};

const validity = () => ({
  notBefore: new Date(Date.now() - 3_600_000),
  notAfter: new Date(Date.now() + 365 * 86_400_000),
});

async function issue(
  ca: { cert: x509.X509Certificate; keys: webcrypto.CryptoKeyPair },
  subject: string,
  extensions: x509.Extension[],
): Promise<Pem> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject,
    issuer: ca.cert.subject,
    ...validity(),
    signingAlgorithm: RSA_SHA256,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    extensions: [new x509.BasicConstraintsExtension(false, undefined, true), ...extensions],
  });
  return { cert: cert.toString('pem'), key: await toPem(keys.privateKey, 'pkcs8') };
}

export async function createPki(): Promise<ClusterPki> {
  const caKeys = await newKeys();
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: 'CN=edge-operator-local-ca',
    ...validity(),
    signingAlgorithm: RSA_SHA256,
    keys: caKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  const ca = { cert: caCert, keys: caKeys };
  const usage = new x509.KeyUsagesExtension(
    x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
    true,
  );
  const serving = await issue(ca, 'CN=kube-apiserver', [
    usage,
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    new x509.SubjectAlternativeNameExtension([
      { type: 'ip', value: '127.0.0.1' },
      // the `kubernetes` Service address: how pods on a node (node.ts) reach the API server
      { type: 'ip', value: '10.0.0.1' },
      { type: 'dns', value: 'localhost' },
      { type: 'dns', value: 'kubernetes.default.svc' },
    ]),
  ]);
  const admin = await issue(ca, 'CN=admin, O=system:masters', [
    usage,
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
  ]);
  const sa = await newKeys();
  return {
    ca: { cert: caCert.toString('pem'), key: await toPem(caKeys.privateKey, 'pkcs8') },
    serving,
    admin,
    serviceAccount: {
      publicKey: await toPem(sa.publicKey, 'spki'),
      privateKey: await toPem(sa.privateKey, 'pkcs8'),
    },
  };
}
