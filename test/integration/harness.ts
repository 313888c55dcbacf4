import { generateKeyPairSync } from 'node:crypto';
import { createClient, type EdgeClient } from '../../src/api/client.ts';
import { type Emulator, type EmulatorOptions, startEmulator } from '../../src/emulator/server.ts';

export interface Harness {
  emu: Emulator;
  client: EdgeClient;
  close(): Promise<void>;
}

export async function emulatorWithClient(opts: EmulatorOptions = {}): Promise<Harness> {
  const emu = await startEmulator(opts);
  const client = createClient({
    baseUrl: emu.url,
    apiKey: emu.apiKey,
    rateLimitPerMinute: Infinity,
    retry: { maxAttempts: 1 },
  });
  return {
    emu,
    client,
    close: async () => {
      await client.close();
      await emu.close();
    },
  };
}

/** A client with one account's key (`default` is the account of `apiKeys`). */
export function accountClient(emu: Emulator, account: string): EdgeClient {
  const apiKey = emu.accounts[account];
  if (apiKey === undefined) throw new Error(`the emulator has no account ${account}`);
  return createClient({ baseUrl: emu.url, apiKey, rateLimitPerMinute: Infinity, retry: { maxAttempts: 1 } });
}

/** A real OpenSSH ed25519 public key line. */
export function sshPublicKey(comment = 'test@example'): string {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const type = Buffer.from('ssh-ed25519');
  const len = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const blob = Buffer.concat([len(type.length), type, len(raw.length), raw]);
  return `ssh-ed25519 ${blob.toString('base64')} ${comment}`;
}

/** Raw HTTP against the emulator, for what the typed client would never send. */
export async function raw(
  emu: Emulator,
  method: string,
  path: string,
  init: { body?: string; headers?: Record<string, string> } = {},
) {
  const res = await fetch(`${emu.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${emu.apiKey}`, 'service-version': '2', ...init.headers },
    body: init.body,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}
