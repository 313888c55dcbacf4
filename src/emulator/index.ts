export { AgentSpec, AgentsFile } from './agents.ts';
export { FaultConfig } from './faults.ts';
export {
  type ApiKey,
  DEFAULT_ACCOUNT,
  DEFAULT_API_KEY,
  type Emulator,
  type EmulatorOptions,
  startEmulator,
} from './server.ts';
