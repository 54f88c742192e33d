import { describe, expect, it } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import {
  DEFAULT_QUEUE_MAX_MESSAGE_BYTES,
  PUBLISHER_ENVIRONMENT,
  readPublisherEnvironment,
} from '../../lambdas/publisher/environment.js';

const complete = {
  QUEUE_URL: 'http://127.0.0.1:1/123456789012/events.fifo',
  IDEMPOTENCY_TABLE_NAME: 'idempotency',
};

describe('publisher environment', () => {
  it('names exactly the variables the stack and the sandbox set', () => {
    expect(PUBLISHER_ENVIRONMENT).toEqual({
      queueUrl: 'QUEUE_URL',
      idempotencyTableName: 'IDEMPOTENCY_TABLE_NAME',
      queueMaxMessageBytes: 'QUEUE_MAX_MESSAGE_BYTES',
      idempotencyTtlSeconds: 'IDEMPOTENCY_TTL_SECONDS',
    });
  });

  it('reads them, with defaults for the optional ones', () => {
    expect(readPublisherEnvironment(complete)).toEqual({
      queueUrl: complete.QUEUE_URL,
      idempotencyTableName: 'idempotency',
      queueMaxMessageBytes: DEFAULT_QUEUE_MAX_MESSAGE_BYTES,
      idempotencyTtlSeconds: undefined,
    });
    expect(
      readPublisherEnvironment({
        ...complete,
        QUEUE_MAX_MESSAGE_BYTES: '1048576',
        IDEMPOTENCY_TTL_SECONDS: '86400',
      }),
    ).toMatchObject({ queueMaxMessageBytes: 1_048_576, idempotencyTtlSeconds: 86_400 });
  });

  it('names every missing variable at once', () => {
    expect(() => readPublisherEnvironment({})).toThrow(OncelyConfigurationError);
    expect(() => readPublisherEnvironment({})).toThrow(
      /^The publisher cannot start: QUEUE_URL is not set; IDEMPOTENCY_TABLE_NAME is not set\./,
    );
  });

  it('refuses values it cannot use, saying which and why', () => {
    expect(() => readPublisherEnvironment({ ...complete, QUEUE_MAX_MESSAGE_BYTES: '256KB' })).toThrow(
      'QUEUE_MAX_MESSAGE_BYTES must be a whole number from 1024 to 1048576, not "256KB"',
    );
    expect(() => readPublisherEnvironment({ ...complete, QUEUE_MAX_MESSAGE_BYTES: '2000000' })).toThrow(
      'QUEUE_MAX_MESSAGE_BYTES must be a whole number from 1024 to 1048576',
    );
    expect(() => readPublisherEnvironment({ ...complete, IDEMPOTENCY_TTL_SECONDS: '0' })).toThrow(
      'IDEMPOTENCY_TTL_SECONDS must be a whole number of at least 1, not "0"',
    );
  });
});
