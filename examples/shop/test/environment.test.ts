import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  CONSUMER_ENVIRONMENT,
  ConsumerEnvironmentError,
  DEFAULT_NOTIFICATION_TIMEOUT_MS,
  readConsumerConfig,
} from '../consumer/environment.js';
import { handler } from '../consumer/handler.js';
import { lambdaContext } from '../../../test/support/lambda-context.js';

const complete = {
  IDEMPOTENCY_TABLE_NAME: 'oncely-idempotency',
  LEDGER_TABLE_NAME: 'oncely-ledger',
  DLQ_URL: 'http://127.0.0.1:4566/000000000000/events-dlq.fifo',
  NOTIFICATION_URL: 'http://127.0.0.1:8025/send',
};

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('consumer environment', () => {
  it('names exactly the variables the stack and the sandbox set', () => {
    expect(Object.values(CONSUMER_ENVIRONMENT).sort()).toEqual([
      'DLQ_URL',
      'IDEMPOTENCY_TABLE_NAME',
      'IDEMPOTENCY_TTL_SECONDS',
      'LEDGER_TABLE_NAME',
      'MAX_CONCURRENT_GROUPS',
      'NOTIFICATION_MODE',
      'NOTIFICATION_TIMEOUT_MS',
      'NOTIFICATION_URL',
      'QUEUE_URL',
    ]);
  });

  it('reads the required variables and defaults the optional ones', () => {
    expect(readConsumerConfig(complete)).toEqual({
      idempotencyTableName: 'oncely-idempotency',
      ledgerTableName: 'oncely-ledger',
      dlqUrl: complete.DLQ_URL,
      notificationUrl: complete.NOTIFICATION_URL,
      idempotencyTtlSeconds: undefined,
      maxConcurrentGroups: undefined,
      notificationTimeoutMs: DEFAULT_NOTIFICATION_TIMEOUT_MS,
      notificationMode: 'at-most-once',
    });
    const tuned = {
      ...complete,
      IDEMPOTENCY_TTL_SECONDS: '86400',
      MAX_CONCURRENT_GROUPS: '4',
      NOTIFICATION_TIMEOUT_MS: '800',
      NOTIFICATION_MODE: 'at-least-once',
    };
    expect(readConsumerConfig(tuned)).toMatchObject({
      idempotencyTtlSeconds: 86_400,
      maxConcurrentGroups: 4,
      notificationTimeoutMs: 800,
      notificationMode: 'at-least-once',
    });
  });

  it('names every missing or invalid variable in one error', () => {
    const { LEDGER_TABLE_NAME: _ledger, NOTIFICATION_URL: _url, ...missing } = complete;
    expect(() => readConsumerConfig(missing)).toThrow(ConsumerEnvironmentError);
    expect(() => readConsumerConfig(missing)).toThrow(
      /LEDGER_TABLE_NAME is not set; NOTIFICATION_URL is not set/,
    );
    const invalid = {
      ...complete,
      DLQ_URL: 'events-dlq',
      MAX_CONCURRENT_GROUPS: '0',
      NOTIFICATION_TIMEOUT_MS: 'soon',
      NOTIFICATION_MODE: 'exactly-once',
    };
    expect(() => readConsumerConfig(invalid)).toThrow(
      /DLQ_URL must be an http\(s\) URL; MAX_CONCURRENT_GROUPS must be positive; NOTIFICATION_TIMEOUT_MS must be a whole number; NOTIFICATION_MODE must be at-most-once or at-least-once/,
    );
  });

  it('lets the handler module be imported without the environment, and says what is missing when invoked', async () => {
    for (const name of Object.values(CONSUMER_ENVIRONMENT)) vi.stubEnv(name, undefined);
    await expect(handler({ Records: [] }, lambdaContext())).rejects.toThrow(
      /IDEMPOTENCY_TABLE_NAME is not set; LEDGER_TABLE_NAME is not set; DLQ_URL is not set; NOTIFICATION_URL is not set/,
    );
  });
});
