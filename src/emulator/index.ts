export { type ApiKey, KeysFile } from './accounts.ts';
export { AgentSpec, AgentsFile } from './agent-spec.ts';
export { DEFAULT_ACCOUNT, DEFAULT_API_KEY } from './defaults.ts';
export { FaultConfig } from './faults.ts';
export { type Emulator, type EmulatorOptions, startEmulator } from './server.ts';
