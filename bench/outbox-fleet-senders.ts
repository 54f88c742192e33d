import { EventEmitter } from 'node:events';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { relayBatch, type SenderOptions } from '../lambdas/outbox/relay.js';
import { invocationTimes } from '../lambdas/outbox/sender-environment.js';
import { sweep } from '../lambdas/outbox/sweeper.js';
import { RELAY_FILTER } from '../lib/constructs/outbox-functions.js';
import type { ResolvedOutboxSettings } from '../lib/constructs/outbox-settings.js';
import { LOCAL_REGION, localAwsConfig, localFunctionArn } from '../sandbox/local-aws-config.js';
import { pause } from '../sandbox/pause.js';
import { type StreamBatchReport, startStreamPoller } from '../sandbox/stream-poller.js';
import type { LocalStreamSource } from '../sandbox/stream-source.js';

/** The relay's and the sweeper's Lambda timeout, as the construct sets it. */
const FUNCTION_TIMEOUT_MS = 60_000;

/** Who sent a message first, and when (epoch ms): the relay's and the sweeper's own reports. */
export interface SendRecord {
  by: 'relay' | 'sweeper';
  at: number;
}

export interface FleetSendersOptions {
  /** DynamoDB Local's endpoint: the stream is read there, as Lambda reads it beside the table. */
  dynamodbEndpoint: string;
  tableName: string;
  tableArn: string;
  streamArn: string;
  /** Where the functions' own requests go: through the budget proxy, with the queue's sender. */
  sender: Omit<SenderOptions, 'claimMs'>;
  sqs: SQSClient;
  /** The construct's settings: the relay mapping's batch size, retries and ParallelizationFactor, the sweep bounds. */
  settings: ResolvedOutboxSettings;
  /** How often the sweeper runs: the construct's `sweepInterval`, or shorter to look harder. */
  sweepIntervalMs: number;
}

export interface FleetSenders {
  /** Each message key's first send; `onSent` emits `sent` with the keys of each report. */
  readonly sends: Map<string, SendRecord>;
  readonly onSent: EventEmitter;
  /** What the stream poller did with each batch: retries and discards mean the relay was not healthy. */
  readonly batches: StreamBatchReport[];
  /** Relay invocations that threw. */
  readonly relayErrors: string[];
  stop(): Promise<void>;
}

/**
 * The outbox's two senders as the construct deploys them, in this process: the relay on the table's
 * real stream (the sandbox's poller, with the construct's mapping: its filter, batch size, retries,
 * ParallelizationFactor, TRIM_HORIZON), each invocation a `relayBatch` with a Lambda clock; and the
 * sweeper every `sweepIntervalMs` with the construct's `sweepAfter` and `stuckAfter`.
 */
export async function startFleetSenders(options: FleetSendersOptions): Promise<FleetSenders> {
  const { settings, sender } = options;
  const sends = new Map<string, SendRecord>();
  const batches: StreamBatchReport[] = [];
  const relayErrors: string[] = [];
  const onSent = new EventEmitter().setMaxListeners(0);
  const record = (keys: readonly string[], by: SendRecord['by']) => {
    const at = Date.now();
    for (const key of keys) if (!sends.has(key)) sends.set(key, { by, at });
    if (keys.length > 0) onSent.emit('sent', keys);
  };
  const clock = () => {
    const deadline = Date.now() + FUNCTION_TIMEOUT_MS;
    return invocationTimes({ getRemainingTimeInMillis: () => deadline - Date.now() });
  };

  const source: LocalStreamSource = {
    logicalId: 'OutboxRelaySource',
    table: { logicalId: 'OutboxTable', name: options.tableName, arn: options.tableArn },
    streamArn: options.streamArn,
    functionName: 'relay',
    functionArn: localFunctionArn('relay'),
    batchSize: settings.relayBatchSize,
    startingPosition: 'TRIM_HORIZON',
    maximumRetryAttempts: settings.relayRetryAttempts,
    maximumRecordAgeInSeconds: -1,
    bisectBatchOnFunctionError: false,
    reportBatchItemFailures: true,
    filterPatterns: [String(RELAY_FILTER.pattern)],
    // The construct sets no batching window: Lambda's default, none.
    maximumBatchingWindowInSeconds: 0,
    parallelizationFactor: settings.relayParallelization,
  };
  const streams = new DynamoDBStreamsClient(localAwsConfig(options.dynamodbEndpoint));
  const poller = await startStreamPoller({
    streams,
    sqs: options.sqs,
    source,
    region: LOCAL_REGION,
    invoke: async (event) => {
      try {
        const result = await relayBatch(event, {
          ...sender,
          ...clock(),
          onReport: (report) =>
            record(
              report.groups.flatMap((group) => group.sent),
              'relay',
            ),
        });
        return { ok: true, result };
      } catch (error) {
        relayErrors.push(String(error));
        return { ok: false, error: { errorType: 'Error', errorMessage: String(error) } };
      }
    },
    onBatch: (report) => batches.push(report),
  });

  const stopping = new AbortController();
  const sweeper = (async () => {
    while (!stopping.signal.aborted) {
      await pause(options.sweepIntervalMs, stopping.signal);
      if (stopping.signal.aborted) return;
      const report = await sweep({
        ...sender,
        ...clock(),
        sweepAfterMs: settings.sweepAfter.toMilliseconds(),
        stuckAfterMs: settings.stuckAfter.toMilliseconds(),
      });
      record(
        report.groups.flatMap((group) => group.sent),
        'sweeper',
      );
    }
  })();

  return {
    sends,
    onSent,
    batches,
    relayErrors,
    async stop() {
      stopping.abort();
      await Promise.all([poller.stop(), sweeper]);
      streams.destroy();
    },
  };
}
