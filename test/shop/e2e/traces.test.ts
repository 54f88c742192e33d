import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OperationsCommand, parseCommandLine } from '../../../cli/command-line.js';
import type { MessageHistory } from '../../../cli/history-story.js';
import { runOperation } from '../../../cli/operations-command.js';
import { publish } from '../../../lambdas/client/index.js';
import { createEnvelope, type OutgoingMessage } from '../../../lambdas/common/envelope.js';
import { sqsTraceAttributes } from '../../../lambdas/common/trace-context.js';
import { LEDGER_NAMESPACE, ledgerItemId } from '../../../lambdas/shop/consumer/ledger.js';
import { orderPlacedKey } from '../../../lambdas/shop/orders/place-order.js';
import { LEDGER_TABLE_OUTPUT, ORDERS_OUTPUTS } from '../../../lib/shop/shop-stack.js';
import { localAwsConfig } from '../../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../../sandbox/local-sandbox.js';
import { type CollectedSpan, readTraceFile } from '../../../sandbox/trace-file.js';
import { BUSY_MACHINE_RETRY } from '../../support/publisher.js';
import { sharedAssembly } from '../../support/shared-assembly.js';
import { inProducerSpan, recordingSpans } from '../../support/tracing.js';

// DESIGN §6 and docs/local.md, "Traces": the sandbox gives the shop's functions what the ADOT layer
// gives them on AWS, and collects their spans. One connected trace from the producer's publish to
// the consumer's effect; from PlaceOrder's write through the outbox relay; and through the DLQ and
// `oncely dlq redrive` back to the effect — each record span linked to the producer, saying what
// happened, a child of its invocation's span.

const SHOP_APP = fileURLToPath(new URL('../../..', import.meta.url));
const WAIT = { timeout: 120_000, interval: 250 };
const run = randomUUID().slice(0, 8);

// The producer's side: this process, with OpenTelemetry's SDK registered as a service would.
recordingSpans();

let sandbox: Sandbox;
let directory: string;
let readyFile: string;
let lambda: LambdaClient;
let sqs: SQSClient;
let dynamodb: DynamoDBClient;

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'oncely-traces-'));
  sandbox = await startSandbox({
    appDirectory: SHOP_APP,
    cloudAssembly: await sharedAssembly(SHOP_APP),
    functionOutput: () => undefined,
    traces: { file: join(directory, 'traces.otlp.jsonl') },
  });
  readyFile = join(directory, 'ready.json');
  writeFileSync(readyFile, JSON.stringify(sandbox.description));
  const { endpoints } = sandbox.description;
  lambda = new LambdaClient(localAwsConfig(endpoints.lambda));
  sqs = new SQSClient(localAwsConfig(endpoints.sqs));
  dynamodb = new DynamoDBClient(localAwsConfig(endpoints.dynamodb));
}, 240_000);

afterAll(async () => {
  lambda?.destroy();
  sqs?.destroy();
  dynamodb?.destroy();
  await sandbox?.stop();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

const resources = () => sandbox.pipelineResources();
const placeOrderFunction = () => String(sandbox.description.outputs[ORDERS_OUTPUTS.placeOrderFunctionName]);
const spans = () => readTraceFile(String(sandbox.description.traces?.file));
const idOf = ({ traceId, spanId }: { traceId: string; spanId: string }) => `${traceId}-${spanId}`;
const fromTraceparent = (traceparent: string) => traceparent.split('-').slice(1, 3).join('-');

/** The consumer's record spans of `key`, in the order they were exported. */
async function recordSpans(key: string): Promise<CollectedSpan[]> {
  return (await spans()).filter(
    (span) => span.kind === 'consumer' && span.attributes['oncely.message.key'] === key,
  );
}

/** The outcomes of `key`'s record spans, in order. */
const outcomesOf = async (key: string) =>
  (await recordSpans(key)).map((span) => span.attributes['oncely.outcome']);

/** The send spans of `sender` that carried `key`. */
async function sendSpans(sender: string, key: string): Promise<CollectedSpan[]> {
  return (await spans()).filter(
    (span) =>
      span.kind === 'producer' &&
      span.attributes['oncely.sender'] === sender &&
      (span.attributes['oncely.message.keys'] as string[]).includes(key),
  );
}

/** The span whose child `span` is. */
async function parentOf(span: CollectedSpan): Promise<CollectedSpan | undefined> {
  return (await spans()).find((candidate) => candidate.spanId === span.parentSpanId);
}

/** `oncely history KEY --namespace ledger --json`, on the sandbox's ready file. */
async function ledgerHistory(key: string): Promise<MessageHistory> {
  const words = ['history', key, '--namespace', LEDGER_NAMESPACE, '--json', '--ready-file', readyFile];
  let printed = '';
  const code = await runOperation(parseCommandLine(words, {}) as OperationsCommand, {
    print: (text) => (printed = text),
  });
  expect(code).toBe(0);
  return JSON.parse(printed) as MessageHistory;
}

const stockReceived = (sku: string, quantity: number) =>
  ({
    type: 'StockReceived',
    groupId: 'warehouse',
    key: `stock-${sku}-${quantity}`,
    payload: { sku, quantity },
  }) satisfies OutgoingMessage;

async function stock(sku: string): Promise<number | undefined> {
  const { Item } = await dynamodb.send(
    new GetItemCommand({
      TableName: String(sandbox.description.outputs[LEDGER_TABLE_OUTPUT]),
      Key: { id: { S: ledgerItemId.stock(sku) } },
      ConsistentRead: true,
    }),
  );
  return Item ? (unmarshall(Item).available as number) : undefined;
}

const send = (messages: OutgoingMessage[]) =>
  publish(messages, { functionName: resources().publisherFunctionName, lambda, retry: BUSY_MACHINE_RETRY });

describe('traces through the sandbox', { timeout: 300_000 }, () => {
  it('from publish to the effect: the publisher and the consumer link to the producer; a duplicate says so', async () => {
    const message = stockReceived(`sku-${run}-traced`, 3);
    const { traceparent } = await inProducerSpan(() => send([message]));
    const producer = fromTraceparent(traceparent);
    await expect.poll(() => outcomesOf(message.key), WAIT).toEqual(['applied']);
    const [applied] = (await recordSpans(message.key)) as [CollectedSpan];
    expect(applied.links.map(idOf)).toEqual([producer]);
    expect(applied.service).toBe(resources().consumerFunctionName);
    expect(applied.attributes).toMatchObject({ 'oncely.message.group': 'warehouse', 'oncely.attempt': 1 });
    // A child of the consumer's invocation span, as Lambda's instrumentation starts it.
    expect(await parentOf(applied)).toMatchObject({
      kind: 'server',
      service: resources().consumerFunctionName,
      attributes: { 'faas.trigger': 'pubsub' },
    });
    const [publisherSend] = await sendSpans('publisher', message.key);
    expect(publisherSend?.links.map(idOf)).toEqual([producer]);
    expect(publisherSend?.service).toBe(resources().publisherFunctionName);
    expect((await parentOf(publisherSend as CollectedSpan))?.kind).toBe('server');

    // The same message again, as SQS would deliver it after its deduplication window.
    const { MessageAttributes } = sqsTraceAttributes({ traceparent });
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: resources().queueUrl,
        MessageBody: JSON.stringify(createEnvelope(message)),
        MessageGroupId: message.groupId,
        MessageDeduplicationId: randomUUID(),
        MessageAttributes,
      }),
    );
    await expect.poll(() => outcomesOf(message.key), WAIT).toEqual(['applied', 'duplicate']);
    const [, duplicate] = (await recordSpans(message.key)) as [CollectedSpan, CollectedSpan];
    expect(duplicate.links.map(idOf)).toEqual([producer]);
    expect(await stock(message.payload.sku)).toBe(3);
  });

  it("from PlaceOrder's write through the outbox relay, to the DLQ, and through a redrive to the effect", async () => {
    const sku = `sku-${run}-late`;
    const order = {
      orderId: `o-${run}-late`,
      customerId: `c-${run}-late`,
      sku,
      quantity: 1,
      amountCents: 300,
    };
    const key = orderPlacedKey(order.orderId);
    // No stock yet: the consumer's business rule rejects the order, which goes to the DLQ.
    const placed = await lambda.send(
      new InvokeCommand({
        FunctionName: placeOrderFunction(),
        Payload: new TextEncoder().encode(JSON.stringify(order)),
      }),
    );
    expect(placed.FunctionError).toBeUndefined();
    await expect.poll(() => outcomesOf(key), WAIT).toEqual(['dead-lettered']);
    // The write ran in PlaceOrder's invocation span: the outbox kept that context with the message.
    const writer = (await spans()).find(
      (span) => span.kind === 'server' && span.service === placeOrderFunction(),
    );
    expect(writer).toBeDefined();
    const [relaySend] = await sendSpans('relay', key);
    expect(relaySend?.links.map(idOf)).toEqual([idOf(writer as CollectedSpan)]);
    const [deadLettered] = (await recordSpans(key)) as [CollectedSpan];
    expect(deadLettered.links.map(idOf)).toEqual([idOf(writer as CollectedSpan)]);
    expect(deadLettered.status.code).toBe('error');

    await send([stockReceived(sku, 3)]);
    await expect.poll(() => stock(sku), WAIT).toBe(3);
    const command = parseCommandLine(
      ['dlq', 'redrive', '--key', key, '--yes', '--ready-file', readyFile],
      {},
    ) as OperationsCommand;
    expect(await runOperation(command, { print: () => undefined })).toBe(0);
    await expect.poll(() => outcomesOf(key), WAIT).toEqual(['dead-lettered', 'applied']);
    const [, applied] = (await recordSpans(key)) as [CollectedSpan, CollectedSpan];
    expect(applied.links.map(idOf)).toEqual([idOf(writer as CollectedSpan)]);
    expect(await stock(sku)).toBe(2);

    // `oncely history` tells it in order, its spans beside its records and its outbox item.
    const story = await ledgerHistory(key);
    expect(story.spansRead).toBe(true);
    expect(story.steps.filter((step) => step.source !== 'span').map((step) => step.event)).toEqual([
      'published',
      'written to the outbox',
      'sent to the queue by the relay',
      'sent to the DLQ',
      'delivered (a redriven copy): effect applied in one transaction',
    ]);
    const spansTold = story.steps.filter((step) => step.source === 'span');
    expect(spansTold.map((step) => step.detail)).toEqual([
      undefined,
      expect.stringMatching(/^dead-lettered, error: /),
      'applied',
    ]);
    expect(spansTold[0]?.event).toBe(`span ${relaySend?.name}`);
    expect(new Set(spansTold.map((step) => step.traceId))).toEqual(
      new Set([relaySend?.traceId, deadLettered.traceId, applied.traceId]),
    );
    const times = story.steps.map((step) => step.at);
    expect(times).toEqual([...times].sort());
    expect(story.outbox).toMatchObject({ status: 'SENT', sentBy: 'relay' });
    expect(story.next).toEqual([expect.stringMatching(/: done/)]);
  });
});
