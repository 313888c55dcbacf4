// What a command needs from the outside world, injectable so tests run commands
// in-process with a controllable clock and captured output.
export interface CliIO {
  out(s: string): void;
  err(s: string): void;
  isTTY: boolean;
  env: NodeJS.ProcessEnv;
  sleep(ms: number): Promise<void>;
  now(): number;
}

export const processIO = (): CliIO => ({
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  isTTY: !!process.stdout.isTTY,
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
