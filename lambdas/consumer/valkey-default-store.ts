import { provideValkeyDefaultStore } from './consumer-setup.js';
import { serverlessValkeyStore } from './serverless-valkey-store.js';

// Importing this module (OncelyPipeline injects it into a `leaseRecords: 'valkey'` consumer's
// bundle) provides the consumer's default Valkey store: the others carry neither it nor iovalkey.
provideValkeyDefaultStore(serverlessValkeyStore);
