// @peculiar/x509 needs the reflect-metadata polyfill loaded first; import x509 from here.
import 'reflect-metadata';
import { randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as Crypto);

export { x509 };

export const RSA_SHA256 = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
} as const;

export const newKeys = async () =>
  (await webcrypto.subtle.generateKey(RSA_SHA256, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
export const serial = () =>
  randomBytes(8)
    .toString('hex')
    .replace(/^[89a-f]/, '1');

/** A self-signed certificate in PEM, for the emulator's SAML request signing. */
export async function selfSignedPem(commonName: string, years = 5, ca = false): Promise<string> {
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${commonName}`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + years * 365 * 86_400_000),
    signingAlgorithm: RSA_SHA256,
    keys: await newKeys(),
    ...(ca ? { extensions: [new x509.BasicConstraintsExtension(true, undefined, true)] } : {}),
  });
  return cert.toString('pem');
}

/** A self-signed CA certificate in PEM (basic constraints CA:TRUE): what mutual TLS uploads. */
export const selfSignedCaPem = (commonName: string, years = 5) => selfSignedPem(commonName, years, true);
