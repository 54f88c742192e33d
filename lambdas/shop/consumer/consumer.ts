import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { type FifoBatchOptions, fifoBatch, standardBatch } from 'oncely/consumer';
import type { ShopConfig } from './environment.js';
import { ledgerOperations } from './ledger.js';
import { notificationOperation, reminderOperation } from './notifications.js';

/**
 * The shop's consumer: ledger events in transactional mode, notifications and reminders in lease
 * mode (receipts at-most-once by default, reminders at-least-once): all three modes. Inside
 * the Oncely pipeline `fifoBatch` (or `standardBatch` on a standard queue, `config.queueType`)
 * needs nothing but its operations; `batch` overrides its defaults (tests give their own store,
 * clients and telemetry).
 */
export function createShopHandler(
  config: ShopConfig,
  batch: Partial<Omit<FifoBatchOptions, 'operations'>> = {},
) {
  const operations = {
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
  if (config.queueType === 'standard') {
    // The same operations; only FIFO's group setting means nothing here.
    const { maxConcurrentGroups: _groups, ...shared } = batch;
    return middy<SQSEvent, SQSBatchResponse>().use(standardBatch({ ...shared, operations }));
  }
  return middy<SQSEvent, SQSBatchResponse>().use(fifoBatch({ ...batch, operations }));
}
