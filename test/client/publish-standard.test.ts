import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { SendMessageBatchCommandInput, SendMessageBatchCommandOutput } from '@aws-sdk/client-sqs';
// The package's own name: what other services import.
import { publish } from 'oncely/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectedKey, nth, orders, usePublisherFixture } from '../support/publisher.js';
import {
  PUBLISHER_FUNCTION,
  type ServedFunction,
  servePublisherFunction,
} from '../support/publisher-function.js';
import { drainQueue } from '../support/sqs.js';
import { injectEntryFaults, PERMANENT } from '../support/sqs-faults.js';

/** `publish` through a publisher on a standard queue (DESIGN §5.1); publish.test.ts has the FIFO cases. */
const FUNCTION = PUBLISHER_FUNCTION;
const FAST = { maxAttempts: 20, baseDelayMs: 2, maxDelayMs: 10 };

const fixture = usePublisherFixture({ standard: true });
let lambda: LambdaClient;
let served: ServedFunction;
/** Each invocation's requestId and message count, in order. */
let invocations: { requestId?: string; messages?: number }[];

beforeEach(async () => {
  invocations = [];
  const publisher = fixture.publisher();
  served = await servePublisherFunction((event, context) => {
    const request = event as { requestId?: string; messages?: unknown[] };
    invocations.push({ requestId: request.requestId, messages: request.messages?.length });
    return publisher(event, context);
  });
  lambda = served.lambda;
});

afterEach(async () => {
  await served.stop();
});

const options = () => ({ functionName: FUNCTION, lambda, retry: FAST });
const statuses = (results: { status: string }[]) => results.map((result) => result.status);

/** While `active()`, SendMessageBatch answers leave out the entry of `key`: SQS enqueued it, the publisher cannot tell. */
function hideAnswersOfKey(key: string, active: () => boolean) {
  fixture.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName !== 'SendMessageBatchCommand' || !active()) return result;
      const { Entries = [] } = args.input as SendMessageBatchCommandInput;
      const hidden = new Set(
        Entries.filter((e) => JSON.parse(e.MessageBody ?? '').key === key).map((e) => e.Id),
      );
      const output = result.output as SendMessageBatchCommandOutput;
      const Successful = (output.Successful ?? []).filter((entry) => !hidden.has(entry.Id));
      return { ...result, output: { ...output, Successful } };
    },
    { step: 'initialize', name: `hideAnswersOf-${key}` },
  );
}

describe('publish to a standard queue', () => {
  it('re-sends an unknown message though a later one of its group was sent: the copies are the consumer’s to drop', async () => {
    const messages = orders(2, 1);
    const hidden = expectedKey(nth(messages, 0));
    hideAnswersOfKey(hidden, () => invocations.length === 1);

    const { requestId, results, queueType } = await publish(messages, options());

    // On a FIFO queue the first would stay unknown: re-sent, it would land behind the second
    // (publish.test.ts, item 11a). A standard queue keeps no order, so the round sends it.
    expect(statuses(results)).toEqual(['sent', 'sent']);
    expect(queueType).toBe('standard');
    expect(invocations).toEqual([
      { requestId, messages: 2 },
      { requestId: expect.stringMatching(new RegExp(`^${requestId}~.*\\.r1$`)), messages: 1 },
    ]);
    // The publisher's 5 attempts in the first invocation each enqueued it, the round once more.
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 7); // and not one more
    expect(received.filter((message) => message.envelope.key === hidden)).toHaveLength(6);
  });

  it('blocks nothing behind a failed message; publishing again sends only it, once', async () => {
    const messages = orders(3, 1);
    const refused = expectedKey(nth(messages, 0));
    let firstCall = true;
    injectEntryFaults(
      fixture.sqs,
      ({ key }) => (firstCall && key === refused ? { when: 'before-sending', ...PERMANENT } : undefined),
      { laterEntriesOfGroupFail: false },
    );

    const first = await publish(messages, { ...options(), requestId: 'standard-again' });
    expect(statuses(first.results)).toEqual(['failed', 'sent', 'sent']); // on FIFO: failed, blocked, blocked
    expect(invocations).toHaveLength(1); // nothing unknown: no round

    firstCall = false;
    invocations.length = 0;
    const again = await publish(messages, { ...options(), requestId: 'standard-again' });

    expect(statuses(again.results)).toEqual(['sent', 'sent', 'sent']);
    expect(invocations).toEqual([
      { requestId: 'standard-again', messages: 3 },
      { requestId: expect.stringMatching(/^standard-again~/), messages: 1 },
    ]);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 3); // and not one more
    expect(received.map((message) => message.envelope.key).sort()).toEqual(messages.map(expectedKey).sort());
  });
});
