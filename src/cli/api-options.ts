import { type Command, InvalidArgumentError, Option } from 'commander';
import { createClient, type EdgeClient } from '../api/client.ts';
import { apiKeyOf } from '../operator/config.ts';
import { ConfigError } from '../operator/runtime/manager/config-error.ts';
import { keyUrl } from '../operator/settings/table.ts';
import { CliError, EXIT } from './io.ts';

/** --api-url / --api-key / --api-key-file, shared with the operator's names. */
export function withApiOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--api-url <url>', 'Edge API base URL').env('EDGE_API_URL'))
    .addOption(
      new Option('--api-key <key>', 'API key (prefer the env var or a key file)').env('EDGE_API_KEY'),
    )
    .addOption(new Option('--api-key-file <path>', 'file holding the API key').env('EDGE_API_KEY_FILE'))
    .addOption(
      new Option('--api-rate-limit <n>', "requests a minute this command may send (the account's limit)")
        .env('EDGE_API_RATE_LIMIT')
        .default('120'),
    );
}

export function clientFrom(o: {
  apiUrl?: string;
  apiKey?: string;
  apiKeyFile?: string;
  apiRateLimit?: string;
}): EdgeClient {
  if (!o.apiUrl)
    throw new CliError(
      'no API URL: set EDGE_API_URL or --api-url (the emulator: edgectl emulator)',
      EXIT.usage,
    );
  // checked as the operator checks them: one line naming the flag, the key never shown
  let apiKey: string | undefined;
  try {
    keyUrl('--api-url', o.apiUrl);
    apiKey = apiKeyOf({ apiKey: o.apiKey, apiKeyFile: o.apiKeyFile });
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
  if (!apiKey) throw new CliError('no API key: set EDGE_API_KEY, --api-key or --api-key-file', EXIT.usage);
  const perMinute = o.apiRateLimit ?? '120';
  if (!/^[1-9]\d{0,8}$/.test(perMinute))
    throw new CliError(`--api-rate-limit: "${perMinute}" is not a whole number > 0`, EXIT.usage);
  return createClient({ baseUrl: o.apiUrl, apiKey, rateLimitPerMinute: Number(perMinute) });
}

/** An id argument: an empty one (a shell variable that was not set) is a usage error, not an API call. */
export const nonEmptyId = (v: string): string => {
  if (!v.trim()) throw new InvalidArgumentError('an id is required, not an empty string');
  // in a URL's path `.`, `..` or a slash would name another path, not this id
  if (/^\.{1,2}$/.test(v) || /[/?#]/.test(v))
    throw new InvalidArgumentError(
      `"${v}" is not an id (ids hold no '/', '?' or '#', and are not '.' or '..')`,
    );
  return v;
};
