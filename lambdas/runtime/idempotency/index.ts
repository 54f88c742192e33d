export { CompletedRecordCache } from './completed-cache';
export * from './errors';
export { canonicalJson, deriveMessageKey, isValidKey, payloadHash, recordId } from './keys';
export * from './lease';
export { type IdempotentRequestOptions, idempotentRequest } from './middleware';
export { consoleObserver, type IdempotencyObserver } from './observer';
export * from './record';
export * from './store';
export * from './transactional';
