import pino, { type Logger } from 'pino';

/** Paths pino censors wherever they appear; the API key and secret values never reach a log line. */
export const REDACT = [
  'apiKey',
  '*.apiKey',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'secret',
  '*.secret',
  'client_secret',
  '*.client_secret',
  '*.*.client_secret',
  'clientSecret',
  '*.clientSecret',
];

export function createLogger(level = 'info'): Logger {
  return pino({
    level,
    base: { component: 'edge-operator' },
    redact: { paths: REDACT, censor: '[redacted]' },
  });
}
