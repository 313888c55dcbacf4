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

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** One pino JSON line as a person reads it: `12:00:01.234 INFO  message  key=value ...`. */
export function textLine(json: string): string {
  const {
    level,
    time,
    msg,
    component: _c,
    pid: _p,
    hostname: _h,
    ...rest
  } = JSON.parse(json) as Record<string, unknown>;
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' && !/[\s"=]/.test(v) ? v : JSON.stringify(v)}`)
    .join(' ');
  const at = new Date(time as number).toISOString().slice(11, 23);
  return `${at} ${(LEVEL_NAMES[level as number] ?? String(level)).padEnd(5)} ${msg ?? ''}${fields ? `  ${fields}` : ''}\n`;
}

export function createLogger(level = 'info', format: 'json' | 'text' = 'json'): Logger {
  const options = {
    level,
    base: { component: 'edge-operator' },
    redact: { paths: REDACT, censor: '[redacted]' },
  };
  // redaction happens before either format sees the line
  if (format === 'text')
    return pino(options, { write: (line: string) => process.stdout.write(textLine(line)) });
  return pino(options);
}
