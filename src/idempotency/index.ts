export { CompletedRecordCache } from './completed-cache.js';
export * from './errors.js';
export { canonicalJson, deriveMessageKey, isValidKey, payloadHash, recordId } from './keys.js';
export * from './lease.js';
export { type IdempotentRequestOptions, idempotentRequest } from './middleware.js';
export { consoleObserver, type IdempotencyObserver } from './observer.js';
export * from './record.js';
export * from './store.js';
export * from './transactional.js';
