// The API's authentication errors quote the credential they got ("Your authentication:
// wron...."), and a proxy's page may echo it whole. No part of a key may reach a condition, an
// Event, a log line or edgectl's output, so the transport takes it out of every error text,
// before any consumer sees it.

export const REDACTED = '[redacted]';

/**
 * Labels after which the public API's messages quote a credential: one word after "Your
 * authentication:" and the like (ERR_NGROK_202..208; the agent's 105..107), the whole rest of
 * the sentence after "Authorization Header:" (ERR_NGROK_201: a header may hold spaces).
 */
const QUOTED_WORD =
  /\b(your (?:authentication|credential|key|authtoken|api key)\s*:\s*)\S+?(?=\.?(?:\s|$))/gi;
const QUOTED_HEADER = /\b(authorization header\s*:\s*).+?(?=\.\s|\.?$)/gim;

/** The text with quoted credentials and any occurrence of `key` replaced by [redacted]. */
export function redactCredentials(text: string, key?: string): string {
  let out = text.replace(QUOTED_WORD, `$1${REDACTED}`).replace(QUOTED_HEADER, `$1${REDACTED}`);
  // a key that is not quoted after a label (an echo of the request): taken out wherever it is
  if (key && key.length >= 4) out = out.split(key).join(REDACTED);
  return out;
}
