import { describe, expect, it } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_STUCK_AFTER_SECONDS,
  DEFAULT_SWEEP_AFTER_SECONDS,
  producerSettings,
} from '../../lambdas/outbox/environment.js';
import { DEFAULT_PENDING_SHARDS } from '../../lambdas/outbox/layout.js';
import {
  senderFromEnvironment,
  sweepBoundsFromEnvironment,
} from '../../lambdas/outbox/sender-environment.js';

const table = { OUTBOX_TABLE_NAME: 'outbox' };

function thrown(run: () => unknown): OncelyConfigurationError {
  try {
    run();
  } catch (error) {
    if (error instanceof OncelyConfigurationError) return error;
    throw error;
  }
  throw new Error('expected an OncelyConfigurationError');
}

describe("a producer's outbox settings", () => {
  it('takes the options first, then the environment, then the defaults', () => {
    expect(producerSettings({}, table)).toEqual({
      layout: { tableName: 'outbox', partitionKey: 'pk', sortKey: 'sk' },
      maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES,
      pendingShards: DEFAULT_PENDING_SHARDS,
    });
    const environment = {
      ...table,
      OUTBOX_PARTITION_KEY: 'PK',
      OUTBOX_SORT_KEY: '',
      OUTBOX_MAX_MESSAGE_BYTES: '1048576',
      OUTBOX_PENDING_SHARDS: '20',
    };
    expect(producerSettings({}, environment)).toEqual({
      layout: { tableName: 'outbox', partitionKey: 'PK', sortKey: 'sk' },
      maxMessageBytes: 1_048_576,
      pendingShards: 20,
    });
    expect(
      producerSettings(
        { tableName: 'mine', maxMessageBytes: 2_048, pendingShards: 1 },
        { OUTBOX_MAX_MESSAGE_BYTES: 'x', OUTBOX_PENDING_SHARDS: 'x' },
      ),
    ).toEqual({
      layout: { tableName: 'mine', partitionKey: 'pk', sortKey: 'sk' },
      maxMessageBytes: 2_048,
      pendingShards: 1,
    });
  });

  it('names every variable to fix, and what to do, at once', () => {
    const error = thrown(() =>
      producerSettings({}, { OUTBOX_MAX_MESSAGE_BYTES: '512', OUTBOX_PENDING_SHARDS: '33' }),
    );
    expect(error.sources).toEqual(['OUTBOX_TABLE_NAME', 'OUTBOX_MAX_MESSAGE_BYTES', 'OUTBOX_PENDING_SHARDS']);
    expect(error.message).toBe(
      "The outbox's environment is incomplete or invalid: OUTBOX_TABLE_NAME is not set; " +
        'OUTBOX_MAX_MESSAGE_BYTES must be a whole number of at least 1024, not "512"; ' +
        'OUTBOX_PENDING_SHARDS must be a whole number from 1 to 32, not "33". OncelyOutbox.grantWrite ' +
        'sets these variables on your function; elsewhere, set them, or give new Outbox() the options they ' +
        'stand for (tableName, partitionKey, sortKey, maxMessageBytes, pendingShards).',
    );
    expect(error).toMatchObject({ name: 'OncelyConfigurationError', retryable: false });
  });
});

describe("the relay's and sweeper's environment", () => {
  const complete = { ...table, OUTBOX_QUEUE_URL: 'http://127.0.0.1:1/000000000000/events.fifo' };

  it('reads the queue, the table and the size limit', () => {
    expect(senderFromEnvironment('relay', complete)).toMatchObject({
      maxBatchBytes: DEFAULT_MAX_MESSAGE_BYTES,
    });
    expect(senderFromEnvironment('relay', { ...complete, OUTBOX_MAX_MESSAGE_BYTES: '4096' })).toMatchObject({
      maxBatchBytes: 4_096,
    });
  });

  it("keeps a group's order only on a FIFO queue: the URL says which (DESIGN §5.1)", () => {
    expect(senderFromEnvironment('relay', complete)).toMatchObject({ ordered: true });
    const standard = { ...complete, OUTBOX_QUEUE_URL: 'http://127.0.0.1:1/000000000000/events' };
    expect(senderFromEnvironment('relay', standard)).toMatchObject({ ordered: false });
  });

  it('names every variable to fix', () => {
    const error = thrown(() =>
      senderFromEnvironment('relay', { OUTBOX_TABLE_NAME: '', OUTBOX_MAX_MESSAGE_BYTES: '1e6' }),
    );
    expect(error.sources).toEqual(['OUTBOX_QUEUE_URL', 'OUTBOX_TABLE_NAME', 'OUTBOX_MAX_MESSAGE_BYTES']);
    expect(error.message).toMatch(
      /^The outbox's relay or sweeper cannot start: OUTBOX_QUEUE_URL is not set; OUTBOX_TABLE_NAME is empty; OUTBOX_MAX_MESSAGE_BYTES must be a whole number of at least 1024, not "1e6"\. The OncelyOutbox construct sets/,
    );
  });

  it("reads the sweeper's age bounds, zero allowed for sweepAfter", () => {
    expect(sweepBoundsFromEnvironment({})).toEqual({
      sweepAfterMs: DEFAULT_SWEEP_AFTER_SECONDS * 1000,
      stuckAfterMs: DEFAULT_STUCK_AFTER_SECONDS * 1000,
    });
    expect(
      sweepBoundsFromEnvironment({ OUTBOX_SWEEP_AFTER_SECONDS: '0', OUTBOX_STUCK_AFTER_SECONDS: '30' }),
    ).toEqual({ sweepAfterMs: 0, stuckAfterMs: 30_000 });
    const error = thrown(() => sweepBoundsFromEnvironment({ OUTBOX_STUCK_AFTER_SECONDS: '0' }));
    expect(error.sources).toEqual(['OUTBOX_STUCK_AFTER_SECONDS']);
    expect(error.message).toContain(
      'OUTBOX_STUCK_AFTER_SECONDS must be a whole number of at least 1, not "0"',
    );
  });
});
