import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { type FifoBatchOptions, fifoBatch, type StandardBatchOptions, standardBatch } from 'oncely/consumer';
import type { ShopConfig } from './environment.js';
import { ledgerOperations } from './ledger.js';
import { notificationOperation, reminderOperation } from './notifications.js';

/** The shop's operations: ledger events in transactional mode, notifications and reminders in lease mode. */
function shopOperations(config: ShopConfig) {
  return {
    ...ledgerOperations(config.ledgerTableName),
    SendNotification: notificationOperation({
      url: config.notificationUrl,
      timeoutMs: config.notificationTimeoutMs,
      mode: config.notificationMode,
    }),
    SendReminder: reminderOperation({
      url: config.notificationUrl,
      timeoutMs: config.notificationTimeoutMs,
    }),
  };
}

/**
 * The shop's consumer: ledger events in transactional mode, notifications and reminders in lease
 * mode (receipts at-most-once by default, reminders at-least-once): all three modes. Inside
 * the Oncely pipeline `fifoBatch` needs nothing but its operations; `batch` overrides its defaults
 * (tests give their own store, clients and telemetry).
 */
export function createShopHandler(
  config: ShopConfig,
  batch: Partial<Omit<FifoBatchOptions, 'operations'>> = {},
) {
  return middy<SQSEvent, SQSBatchResponse>().use(fifoBatch({ ...batch, operations: shopOperations(config) }));
}

/**
 * The same consumer on a standard (fair) queue: `standardBatch` with the same operations. Its own
 * function, and its own entry (standard-handler.ts), so that each bundle carries one middleware.
 */
export function createStandardShopHandler(
  config: ShopConfig,
  batch: Partial<Omit<StandardBatchOptions, 'operations'>> = {},
) {
  return middy<SQSEvent, SQSBatchResponse>().use(
    standardBatch({ ...batch, operations: shopOperations(config) }),
  );
}
