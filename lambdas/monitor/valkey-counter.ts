import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { OncelyConfigurationError } from '../common/configuration-error.js';
import { providedModule } from '../common/provided-module.js';
import { MONITOR_ENVIRONMENT, type MonitorEnvironment } from './environment.js';
import type { UnresolvedCounter } from './monitor.js';

/** Builds the counter of the cache the environment names. */
export type ValkeyCounterFactory = (
  environment: MonitorEnvironment,
  dynamodb: DynamoDBClient,
) => UnresolvedCounter;

const valkeyCounterFactory = /* @__PURE__ */ providedModule<ValkeyCounterFactory>(
  'oncely.monitor.valkeyCounter',
);

/**
 * Provides (or, with `undefined`, withdraws) the factory of the monitor's Valkey counter; returns
 * the previous one. `valkey-default-counter.ts` provides it, and OncelyPipeline injects that module
 * into the monitor's bundle only with `leaseRecords: 'valkey'`: the others carry no Valkey client.
 * @internal
 */
export function provideValkeyCounter(
  factory: ValkeyCounterFactory | undefined,
): ValkeyCounterFactory | undefined {
  return valkeyCounterFactory.provide(factory);
}

/** The counter of the cache `IDEMPOTENCY_VALKEY_ENDPOINT` names, or none without one. */
export function valkeyCounter(
  environment: MonitorEnvironment,
  dynamodb: DynamoDBClient,
): UnresolvedCounter | undefined {
  if (!environment.valkeyEndpoint) return undefined;
  const factory = valkeyCounterFactory.get();
  if (!factory) {
    throw new OncelyConfigurationError(
      [MONITOR_ENVIRONMENT.valkeyEndpoint],
      `${MONITOR_ENVIRONMENT.valkeyEndpoint} is set, so the monitor counts the unresolved records of that cache, ` +
        "but its bundle has no Valkey client: OncelyPipeline's `leaseRecords: 'valkey'` injects " +
        'lambdas/monitor/valkey-default-counter into it; a bundle of your own must do the same.',
    );
  }
  return factory(environment, dynamodb);
}
