// What the API takes as a certificate authority upload: exactly one CA certificate in PEM. Each
// way an upload misses that has its own number in the public reference (ERR_NGROK_19xx), checked
// in the order the reference's messages imply: something sent, PEM at all, no PEM headers, only
// certificates, each one parsable, one of them, and a CA (RFC 5280 basic constraints).
import { X509Certificate } from 'node:crypto';

export interface PemProblem {
  /** The descriptive name of the API's refusal. */
  errorCode: string;
  /** The values its message names. */
  values: Record<string, string | number>;
  /** What is wrong, after the field's name. */
  message: string;
}

/** RFC 7468 blocks: the label, and what lies between the boundaries. */
const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)\r?\n?-----END \1-----/g;
/** RFC 1421 encapsulated headers ("Proc-Type: 4,ENCRYPTED") before the base64. */
const HEADER = /^[A-Za-z][A-Za-z0-9-]*:/m;
/** How much of a non-PEM upload the refusal quotes. */
const PREFIX_CHARS = 20;

const problem = (errorCode: string, message: string, values: PemProblem['values'] = {}): PemProblem => ({
  errorCode,
  message,
  values,
});
const commonName = (c: X509Certificate) => /CN=([^\n,]+)/.exec(c.subject)?.[1] ?? c.subject;

/** Why `pem` is not one CA certificate in PEM, or undefined when it is. */
export function caPemProblem(pem: string): PemProblem | undefined {
  if (pem.trim() === '') return problem('ERR_CA_PEM_MISSING', 'is empty');
  const blocks = [...pem.matchAll(BLOCK)].map((m) => ({ label: m[1]!, body: m[2]! }));
  if (!blocks.length)
    return problem('ERR_CA_PEM_UNPARSABLE', 'holds no PEM block', { PREFIX: pem.slice(0, PREFIX_CHARS) });
  if (blocks.some((b) => HEADER.test(b.body)))
    return problem('ERR_CA_PEM_HEADERS', 'holds a PEM block with headers');
  const other = blocks.find((b) => b.label !== 'CERTIFICATE');
  if (other)
    return problem('ERR_CA_PEM_TYPE', `holds a ${other.label}, not a CERTIFICATE`, { TYPE: other.label });
  const certs: X509Certificate[] = [];
  for (const b of blocks) {
    try {
      certs.push(new X509Certificate(`-----BEGIN CERTIFICATE-----\n${b.body}\n-----END CERTIFICATE-----\n`));
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      return problem('ERR_CA_CERT_UNPARSABLE', `holds a certificate that does not parse (${error})`, {
        ERROR: error,
      });
    }
  }
  if (certs.length > 1)
    return problem('ERR_CA_PEM_MANY', `holds ${certs.length} certificates, not one`, {
      COUNT: certs.length,
      CNS: certs.map(commonName).join(', '),
    });
  if (!certs[0]!.ca)
    return problem('ERR_CA_NOT_CA', 'is not a CA certificate (its basic constraints do not say CA:TRUE)');
  return undefined;
}
