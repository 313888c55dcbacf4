export * from './client.ts';
export * from './errors.ts';
export * from './limits.ts';
export { flattenOperations, operations } from './operations.ts';
export type { CallEvent, TransportOptions } from './transport.ts';
export { Transport } from './transport.ts';
