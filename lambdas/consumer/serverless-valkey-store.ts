import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { IdempotencyConfigurationError } from '../idempotency/errors.js';
import { ValkeyIdempotencyStore } from '../idempotency/valkey-store.js';
import { type ConsumerEnvironment, SERVERLESS_KEY_PREFIX } from './environment.js';
import { elastiCacheValkeyClient } from './valkey-client.js';

/**
 * The consumer's default store on the ElastiCache Serverless cache `IDEMPOTENCY_VALKEY_ENDPOINT`
 * names (OncelyPipeline's `leaseRecords: 'valkey'`): its client connects on the first command, as
 * `IDEMPOTENCY_VALKEY_USER_ID` with an IAM token signed by the function's credentials (the default
 * DynamoDB client's, the SDK's default chain); its keys carry the `{oncely}` hash tag, since a
 * serverless cache is a cluster and each script's keys must share a slot.
 */
export function serverlessValkeyStore(
  environment: Pick<
    ConsumerEnvironment,
    'valkeyEndpoint' | 'valkeyUserId' | 'valkeyCacheName' | 'idempotencyTtlSeconds'
  >,
  dynamodb: DynamoDBClient,
): ValkeyIdempotencyStore {
  const { valkeyEndpoint, valkeyUserId, valkeyCacheName } = environment;
  if (!valkeyEndpoint || !valkeyUserId || !valkeyCacheName) {
    throw new IdempotencyConfigurationError(
      'serverlessValkeyStore: the environment names no cache (its reader checks that).',
    );
  }
  return new ValkeyIdempotencyStore({
    client: elastiCacheValkeyClient({
      ...valkeyEndpoint,
      userId: valkeyUserId,
      cacheName: valkeyCacheName,
      region: process.env.AWS_REGION ?? '',
      credentials: () => dynamodb.config.credentials(),
    }),
    keyPrefix: SERVERLESS_KEY_PREFIX,
    ttlSeconds: environment.idempotencyTtlSeconds,
  });
}
