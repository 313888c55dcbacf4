// A command's outside world for in-process runs (runCli): its output captured, no terminal, no
// environment, no sleeping (unless `over` says how).
import type { CliIO } from '../../src/cli/io.ts';

export function capturedIO(
  over: Partial<CliIO> = {},
): CliIO & { outText: () => string; errText: () => string } {
  let out = '';
  let err = '';
  return {
    out: (s) => {
      out += s;
    },
    err: (s) => {
      err += s;
    },
    isTTY: false,
    errIsTTY: false,
    env: {},
    sleep: async () => {},
    now: Date.now,
    ...over,
    outText: () => out,
    errText: () => err,
  };
}
