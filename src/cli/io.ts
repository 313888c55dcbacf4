// What a command needs from the outside world, injectable so tests run commands
// in-process with a controllable clock and captured output.
export interface CliIO {
  out(s: string): void;
  err(s: string): void;
  /** Standard output is a terminal (tables as for a person). */
  isTTY: boolean;
  /** Standard error is a terminal (progress drawn over itself). */
  errIsTTY: boolean;
  env: NodeJS.ProcessEnv;
  sleep(ms: number): Promise<void>;
  now(): number;
}

export const processIO = (): CliIO => ({
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  isTTY: !!process.stdout.isTTY,
  errIsTTY: !!process.stderr.isTTY,
  env: process.env,
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  now: Date.now,
});

/** Exit codes scripts can tell apart. */
export const EXIT = {
  ok: 0,
  /** the API or network failed */
  failed: 1,
  /** bad flags or arguments */
  usage: 2,
  /** the agent refused the command (no update available, checks disabled, ...) */
  refused: 3,
  /** no such session or tunnel */
  notFound: 4,
} as const;

export class CliError extends Error {
  readonly code: number;
  constructor(message: string, code: number) {
    super(message);
    this.code = code;
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: these are what it replaces
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
/**
 * Text from the API or an agent, made safe for a terminal: control characters (an escape
 * sequence that sets the title or clears the screen, a newline that forges a row or a line)
 * are shown as escapes instead of acted on.
 */
export const printable = (s: string | undefined): string =>
  String(s ?? '').replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
