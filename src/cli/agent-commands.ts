// Agent commands and the upgrade flow: update, wait, restart, confirm the reconnect.
import type { EdgeClient } from '../api/client.ts';
import { collect } from '../api/client.ts';
import { ApiError, isNotFound } from '../api/errors.ts';
import { UPDATE_RESTART_MIN_WAIT_MS } from '../api/limits.ts';
import type { TunnelSession } from '../api/schemas/agents.ts';
import { CliError, type CliIO, EXIT } from './io.ts';

/**
 * What each refusal means for the person at the terminal, by the emulator's descriptive name
 * (`details.code`); the public API answers with numbers, and its 809 covers three of them.
 */
const REFUSALS: Record<string, string> = {
  ERR_AGENT_NO_UPDATE_AVAILABLE:
    'no update is available for this agent (updates never cross a major version)',
  ERR_AGENT_UPDATE_CHECKS_DISABLED: "the agent's configuration disables update checks",
  ERR_AGENT_ALREADY_UPDATING: 'the agent is already updating; wait, then restart it',
  ERR_AGENT_UPDATED_NOT_RESTARTED:
    'the agent already updated and must be restarted to use the new version: edgectl sessions restart <id>',
  ERR_AGENT_RESTART_UNSUPPORTED: 'restart is not supported on Windows agents',
};
/** The public API's numbers for the refusals that have one of their own. */
const REFUSALS_BY_NUMBER: Record<number, string> = {
  804: REFUSALS.ERR_AGENT_RESTART_UNSUPPORTED!,
  806: REFUSALS.ERR_AGENT_UPDATE_CHECKS_DISABLED!,
};

/** Turns an API error into a message and an exit code. */
export function explain(err: unknown, what: string): CliError {
  if (err instanceof CliError) return err;
  if (err instanceof ApiError) {
    if (isNotFound(err)) return new CliError(`${what}: not found (${err.resourceId ?? ''})`, EXIT.notFound);
    const refusal =
      REFUSALS[err.errorName ?? ''] ?? (err.errorNumber ? REFUSALS_BY_NUMBER[err.errorNumber] : undefined);
    if (refusal) return new CliError(`${what}: ${refusal}`, EXIT.refused);
    // a refused key is the API failing this command, not the agent refusing it
    const auth = err.status === 401 || err.status === 403;
    return new CliError(
      `${what}: ${err.apiMessage ?? err.message}`,
      err.status >= 400 && err.status < 500 && !auth ? EXIT.refused : EXIT.failed,
    );
  }
  return new CliError(`${what}: ${(err as Error).message}`, EXIT.failed);
}

export type Command = 'restart' | 'stop' | 'update';

export async function agentCommand(client: EdgeClient, cmd: Command, id: string): Promise<void> {
  try {
    await client.tunnelSessions[cmd](id, {});
  } catch (err) {
    throw explain(err, `${cmd} ${id}`);
  }
}

const sameAgent = (a: TunnelSession, b: TunnelSession) =>
  a.credential.id === b.credential.id &&
  a.ip === b.ip &&
  a.os === b.os &&
  a.region === b.region &&
  (a.metadata ?? '') === (b.metadata ?? '');

export interface UpgradeResult {
  from: TunnelSession;
  to: TunnelSession;
}

/**
 * update -> wait at least 10 s -> restart -> wait for the agent to reconnect under a new
 * session id. Each failure says which step failed and what state the agent is in.
 */
export async function upgrade(
  client: EdgeClient,
  io: CliIO,
  id: string,
  opts: {
    timeoutMs: number;
    waitMs?: number;
    progress?: (s: string) => void;
    /** Sessions other upgrades running beside this one took as theirs (--all). */
    claimed?: Set<string>;
  },
): Promise<UpgradeResult> {
  const say = opts.progress ?? (() => {});
  const from = await client.tunnelSessions.get(id).catch((e) => {
    throw explain(e, `upgrade ${id}`);
  });
  try {
    await client.tunnelSessions.update(id, {});
  } catch (err) {
    const e = explain(err, `upgrade ${id}: step 1/3 (update) failed`);
    throw new CliError(`${e.message}; the agent is unchanged on version ${from.agent_version}`, e.code);
  }
  const wait = Math.max(UPDATE_RESTART_MIN_WAIT_MS, opts.waitMs ?? UPDATE_RESTART_MIN_WAIT_MS);
  for (let left = wait; left > 0; left -= 1000) {
    say(`${id}: updating, restarting in ${Math.ceil(left / 1000)}s`);
    await io.sleep(Math.min(1000, left));
  }
  // agents alike (one credential behind one address) cannot be told apart: the one that is
  // back is a session that was not online before the restart, and not another upgrade's
  let before: Set<string>;
  try {
    before = new Set((await collect(client.tunnelSessions.list())).map((s) => s.id));
  } catch (err) {
    const e = explain(err, `upgrade ${id}: step 2/3 (restart) failed: listing sessions`);
    throw new CliError(`${e.message}; the agent has updated and is waiting for a restart to use it`, e.code);
  }
  const restartedAt = io.now();
  try {
    await client.tunnelSessions.restart(id, {});
  } catch (err) {
    const e = explain(err, `upgrade ${id}: step 2/3 (restart) failed`);
    throw new CliError(`${e.message}; the agent has updated and is waiting for a restart to use it`, e.code);
  }
  const deadline = restartedAt + opts.timeoutMs;
  while (io.now() < deadline) {
    say(`${id}: restarted, waiting for the agent to reconnect`);
    const sessions = await collect(client.tunnelSessions.list()).catch(() => [] as TunnelSession[]);
    const to = sessions.find((s) => !before.has(s.id) && !opts.claimed?.has(s.id) && sameAgent(s, from));
    if (to) {
      opts.claimed?.add(to.id);
      if (to.agent_version === from.agent_version)
        throw new CliError(
          `upgrade ${id}: step 3/3 (reconnect): the agent is back as ${to.id} but still on version ${from.agent_version}: the update had not finished when it restarted; upgrade ${to.id} again`,
          EXIT.failed,
        );
      return { from, to };
    }
    await io.sleep(1000);
  }
  throw new CliError(
    `upgrade ${id}: step 3/3 (reconnect) failed: the agent did not reconnect within ${Math.round(opts.timeoutMs / 1000)}s; it may still be restarting`,
    EXIT.failed,
  );
}
