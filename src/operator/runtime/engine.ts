// The managed-resource engine's public entry: see engine/ for its parts (plan, execute,
// resolve, report, memo).
export { Engine, priorityOf } from './engine/engine.ts';
export { rawIds } from './engine/resolve.ts';
export type { EngineAccounts, EngineCache, EngineOptions, EngineSecrets, Outcome } from './engine/types.ts';
