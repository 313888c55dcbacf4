// The managed-resource engine's public entry: one reconciler for every kind. The sync reads
// gather -> plan -> execute -> report. Besides the Engine, what the spec wants (resolve.ts
// `wanted`) and the pure decisions (plan*.ts), which `edgectl plan` runs without the engine's
// reads and writes (src/operator/preview*.ts).
export { Engine } from './engine.ts';
export { needsOwnerState, ownerOf, rawIds } from './facts.ts';
export {
  type ConflictInput,
  planReconcile,
  planSync,
  priorityOf,
  requestedReconcile,
  type SyncDecision,
} from './plan.ts';
export { digestsOf, type ModuleStep } from './plan-changes.ts';
export { deleteGuard, planFinalize } from './plan-delete.ts';
export { observeOnlyId, planObserveOnly } from './plan-observe-only.ts';
export { wanted } from './resolve.ts';
export {
  type EngineAccounts,
  type EngineCache,
  type EngineContext,
  type EngineOptions,
  type EngineSecrets,
  type Outcome,
  type Remote,
  type Seen,
  statusOf,
  type Wanted,
} from './types.ts';
