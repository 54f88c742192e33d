import type { Provider, RetryErrorType, RetryStrategy, RetryStrategyV2 } from '@smithy/types';

/**
 * Records how the client's own retry strategy classifies each failed attempt (`TRANSIENT`,
 * `THROTTLING`, `CLIENT_ERROR`, …), in order. It wraps the real strategy instance the client
 * resolved, so what is recorded is the SDK's decision, not a copy of its rules.
 */
export async function recordRetryDecisions(client: {
  config: { retryStrategy: Provider<RetryStrategyV2 | RetryStrategy> };
}): Promise<RetryErrorType[]> {
  const strategy = (await client.config.retryStrategy()) as RetryStrategyV2;
  const decisions: RetryErrorType[] = [];
  const refresh = strategy.refreshRetryTokenForRetry.bind(strategy);
  strategy.refreshRetryTokenForRetry = (token, errorInfo) => {
    decisions.push(errorInfo.errorType);
    return refresh(token, errorInfo);
  };
  return decisions;
}
