import type { MiddlewareObj } from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { Telemetry } from './consumer-setup.js';
import type { ConsumerHooks } from './hooks.js';
import { logFieldsOf, type MessageParser, type ReceivedRecord, receiveRecord } from './message.js';
import { startRecordSpan } from './record-trace.js';
import { RecordTelemetry } from './telemetry.js';

/** What `fifoBatch` and `standardBatch` run: one batch in, its partial batch response out. */
export interface BatchConsumer {
  processBatch(event: SQSEvent, lambdaContext: Context): Promise<SQSBatchResponse>;
}

/**
 * The consumer of an options object, made on its first use and kept with it: what a consumer keeps
 * for the container's life (its clients, its learnt deadline reserve) belongs to the options, so a
 * handler passes the same object on every invocation.
 */
export function consumersByOptions<O extends object>(make: (options: O) => BatchConsumer) {
  const consumers = new WeakMap<O, BatchConsumer>();
  return (options: O): BatchConsumer => {
    let consumer = consumers.get(options);
    if (!consumer) {
      consumer = make(options);
      consumers.set(options, consumer);
    }
    return consumer;
  };
}

/** The Middy middleware of a consumer: after the handler, the batch's response is the consumer's. */
export function batchMiddleware(
  name: string,
  consumer: BatchConsumer,
): MiddlewareObj<SQSEvent, SQSBatchResponse, Error, Context> {
  return {
    name,
    after: async (request) => {
      request.response = await consumer.processBatch(request.event, request.context);
    },
  };
}

/** One record of a batch, with its own logs, metrics and hooks. */
export interface BatchRecord {
  received: ReceivedRecord;
  telemetry: RecordTelemetry;
}

/** The batch's records, each parsed and given its telemetry (its span starts with its turn); a standard queue's log lines also say `queueType` (DESIGN §5.1). */
export function receiveBatch(
  event: SQSEvent,
  queueType: 'fifo' | 'standard',
  parse: MessageParser,
  telemetry: Telemetry,
  hooks: ConsumerHooks | undefined,
): BatchRecord[] {
  return event.Records.map((sqsRecord) => {
    const received = receiveRecord(sqsRecord, parse, queueType);
    const fields = queueType === 'standard' ? { ...logFieldsOf(received), queueType } : logFieldsOf(received);
    return {
      received,
      telemetry: RecordTelemetry.forRecord(telemetry, fields, { hooks, message: received.message }, () =>
        startRecordSpan(telemetry.tracing, received),
      ),
    };
  });
}

/** Records not run because an earlier one failed (`why`): counted, their spans ended given back, logged. */
export function reportSkipped(records: readonly BatchRecord[], why: string): void {
  for (const { telemetry } of records) {
    telemetry.count('skipped');
    telemetry.endSpan('given-back');
    telemetry.logger.info(why);
  }
}

/** Records not started for lack of time (DESIGN §5): counted, their spans ended deferred, logged. */
export function reportDeferred(
  records: readonly BatchRecord[],
  remainingMs: number,
  reserveMs: number,
): void {
  for (const { telemetry } of records) {
    telemetry.count('deferredAtDeadline');
    telemetry.endSpan('deferred');
    telemetry.logger.info(
      'not started: too little of the invocation is left to finish it; SQS redelivers it',
      {
        remainingMs,
        reserveMs,
      },
    );
  }
}
