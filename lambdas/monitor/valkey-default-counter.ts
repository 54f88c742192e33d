import { serverlessValkeyStore } from '../consumer/serverless-valkey-store.js';
import { provideValkeyCounter } from './valkey-counter.js';

// Importing this module (OncelyPipeline injects it into a `leaseRecords: 'valkey'` monitor's bundle)
// lets the monitor count the cache's unresolved records, through the consumer's store on it.
provideValkeyCounter((environment, dynamodb) => serverlessValkeyStore(environment, dynamodb));
