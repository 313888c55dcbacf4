// Fingerprints of remote resources and of texts: what the engine remembers of an object and
// what the bulk observation and the conflict index compare, instead of the things themselves.
import { hash } from 'node:crypto';

/**
 * The fingerprint of a JSON text: 72 bits of its SHA-1, twelve characters (a string that short
 * is a copy, not a slice holding the whole digest), kept per object.
 */
export const textDigest = (json: string): string => hash('sha1', json, 'base64').slice(0, 12);

/**
 * A remote resource's fingerprint, kept instead of the resource itself (a few dozen bytes an
 * object): a bulk list showing the same resource as the last sync brings no news.
 */
export const remoteDigest = (remote: unknown): string => textDigest(JSON.stringify(remote));
