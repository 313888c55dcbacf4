// The managed-resource engine's public entry: one reconciler for every kind. The sync reads
// resolve -> read -> plan -> execute -> report, one file each.
export { Engine } from './engine.ts';
export { priorityOf, requestedReconcile } from './plan.ts';
export { rawIds } from './resolve.ts';
export type { EngineAccounts, EngineCache, EngineOptions, EngineSecrets, Outcome } from './types.ts';
