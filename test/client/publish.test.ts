import { LambdaClient, ResourceNotFoundException } from '@aws-sdk/client-lambda';
import type { SendMessageBatchCommandInput, SendMessageBatchCommandOutput } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
// The package's own name: what other services import.
import {
  OncelyConfigurationError,
  PublishConflictError,
  PublisherResponseError,
  PublisherTimeoutError,
  PublishInProgressError,
  type PublishMessage,
  PublishValidationError,
  publish,
} from 'oncely/client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../../harness/fault-proxy.js';
import { targetedFaultPlan } from '../../harness/targeted-plan.js';
import { payloadHash } from '../../lambdas/idempotency/keys.js';
import type { PublisherHandler } from '../../lambdas/publisher/handler.js';
import type { LambdaInvokeEndpoint } from '../../sandbox/lambda-invoke-endpoint.js';
import { LOCAL_REGION, localAwsConfig } from '../../sandbox/local-aws-config.js';
import { countRequests } from '../../sandbox/request-counter.js';
import { readItem } from '../support/dynamodb.js';
import { expectedKey, orders, usePublisherFixture } from '../support/publisher.js';
import {
  PUBLISHER_FUNCTION,
  type ServedFunction,
  servePublisherFunction,
} from '../support/publisher-function.js';
import { drainQueue, keysOfGroup } from '../support/sqs.js';
import { holdSends, injectCallFaults, injectEntryFaults } from '../support/sqs-faults.js';

const FUNCTION = PUBLISHER_FUNCTION;
const FAST = { maxAttempts: 20, baseDelayMs: 2, maxDelayMs: 10 };

const fixture = usePublisherFixture();
let endpoint: LambdaInvokeEndpoint;
let lambda: LambdaClient;
let served: ServedFunction;
/** The events the function received, in order. */
let invocations: { requestId?: string; callId?: string }[];
/** What the function does around the real publisher; tests replace it to inject trouble. */
let behaviour: (event: unknown, context: Context, publisher: PublisherHandler) => Promise<unknown>;

beforeEach(async () => {
  invocations = [];
  behaviour = (event, context, publisher) => publisher(event, context);
  const publisher = fixture.publisher();
  served = await servePublisherFunction((event, context) => {
    invocations.push(event as { requestId?: string; callId?: string });
    return behaviour(event, context, publisher);
  });
  ({ endpoint, lambda } = served);
});

afterEach(async () => {
  await served.stop();
  vi.unstubAllEnvs();
});

const options = () => ({ functionName: FUNCTION, lambda, retry: FAST });
const statuses = (results: { status: string }[]) => results.map((result) => result.status);

const connectionReset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

/** Makes the `nth` Invoke (the first by default) fail after the function ran: the answer is lost on the way back. */
function loseAnswer(nth = 1) {
  let calls = 0;
  lambda.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      if (++calls === nth) throw connectionReset();
      return result;
    },
    { step: 'deserialize', name: `loseAnswer-${nth}` },
  );
}

const loseFirstAnswer = () => loseAnswer(1);

/**
 * Makes SendMessageBatch calls with a message of `groupId` reach SQS, then lose their answers,
 * while `active()` says so: the publisher can only call those messages `unknown`.
 */
function loseSendsOfGroup(groupId: string, active: () => boolean = () => true) {
  fixture.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName !== 'SendMessageBatchCommand' || !active()) return result;
      const { Entries = [] } = args.input as SendMessageBatchCommandInput;
      if (Entries.some((entry) => entry.MessageGroupId === groupId)) throw connectionReset();
      return result;
    },
    { step: 'initialize', name: `loseSendsOf-${groupId}` },
  );
}

/** Twelve messages of one group, sent one a call: the first, and 11 that wait behind it. */
const lostGroup = () => orders(12, 1, 'lost').map((message) => ({ ...message, groupId: 'customer-lost' }));

const throttled = () => Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });

/** While `active()`, every SendMessageBatch is throttled before it leaves: nothing reaches SQS. */
const throttleSends = (active: () => boolean) =>
  injectCallFaults(fixture.sqs, () =>
    active() ? { when: 'before-sending', error: throttled() } : undefined,
  );

/**
 * While `active()`, SendMessageBatch answers leave out the entries of `groupId`: SQS enqueued them,
 * the publisher cannot tell, and calls them `unknown`.
 */
function hideAnswersOfGroup(groupId: string, active: () => boolean) {
  fixture.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName !== 'SendMessageBatchCommand' || !active()) return result;
      const { Entries = [] } = args.input as SendMessageBatchCommandInput;
      const hidden = new Set(Entries.filter((e) => e.MessageGroupId === groupId).map((e) => e.Id));
      const output = result.output as SendMessageBatchCommandOutput;
      const Successful = (output.Successful ?? []).filter((entry) => !hidden.has(entry.Id));
      return { ...result, output: { ...output, Successful } };
    },
    { step: 'initialize', name: `hideAnswersOf-${groupId}` },
  );
}

/** The invocation events' requestIds, and how many messages each carried. */
const invoked = () =>
  invocations.map((event) => ({
    requestId: event.requestId,
    messages: (event as { messages?: unknown[] }).messages?.length,
  }));

describe('publish (oncely/client)', () => {
  it('publishes through Lambda Invoke and answers one result per message, with its requestId', async () => {
    const messages = orders(12, 3);
    const { requestId, results } = await publish(messages, options());

    expect(statuses(results)).toEqual(messages.map(() => 'sent'));
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    // The call's own id rides along: the response echoes it, and a replay shows an earlier call's.
    expect(invocations).toEqual([{ requestId, callId: expect.stringMatching(/^[0-9a-f-]{36}$/), messages }]);
    await drainQueue(fixture.sqs, fixture.queueUrl, messages.length);
  });

  it.each([
    ['its answer was lost on the way back', loseFirstAnswer],
    [
      'the function crashed after publishing',
      () => {
        let crashed = false;
        behaviour = async (event, context, publisher) => {
          const response = await publisher(event, context);
          if (crashed) return response;
          crashed = true;
          throw new Error('Runtime exited after publishing');
        };
      },
    ],
  ])('retries with the same requestId when %s: one send, and the stored response', async (_, trouble) => {
    trouble();
    const sends = countRequests(fixture.sqs);
    const messages = orders(12, 3);

    const { requestId, results } = await publish(messages, options());

    expect(invocations.map((event) => event.requestId)).toEqual([requestId, requestId]);
    // The first invocation's calls (3 groups, the longest of 5: one message of each per call), and nothing more.
    expect(sends.counts.SendMessageBatch).toBe(5);
    const record = await readItem(fixture.table, `publish#${requestId}`);
    expect(JSON.parse(record?.result ?? 'null')).toEqual({ results, callId: invocations[0]?.callId });
    expect(statuses(results)).toEqual(messages.map(() => 'sent'));
    await drainQueue(fixture.sqs, fixture.queueUrl, messages.length); // and not one more
  });

  it('waits while another attempt holds the requestId, then returns its response', async () => {
    const { held, release } = holdSends(fixture.sqs);
    const sends = countRequests(fixture.sqs);
    const messages = orders(5, 1);

    const first = publish(messages, { ...options(), requestId: 'checkout-9' });
    const second = (async () => {
      await expect.poll(() => held(), { timeout: 60_000 }).toBe(true);
      return publish(messages, { ...options(), requestId: 'checkout-9' });
    })();
    try {
      // The second publish was told "in progress" at least once, and keeps trying.
      await expect.poll(() => invocations.length, { timeout: 60_000 }).toBeGreaterThanOrEqual(3);
    } finally {
      release();
    }

    const [firstResult, secondResult] = await Promise.all([first, second]);
    expect(secondResult).toEqual(firstResult);
    expect(sends.counts.SendMessageBatch).toBe(5); // the first publish's: one message of the group per call
  });

  it('waits out the lease of an attempt that died, past its retry attempts, then publishes', async () => {
    const messages = orders(5, 1);
    // What a dead invocation leaves: the request claimed, its lease running for a while yet.
    const dead = await fixture.store.acquire({
      id: 'publish#checkout-dead',
      payloadHash: payloadHash(messages),
      leaseMs: 1_500,
      takeOverExpiredLease: true,
    });
    if (!dead.acquired) throw new Error('the record was already there');

    const { results } = await publish(messages, {
      ...options(),
      requestId: 'checkout-dead',
      retry: { maxAttempts: 2, baseDelayMs: 50, maxDelayMs: 200 },
    });

    expect(statuses(results)).toEqual(messages.map(() => 'sent'));
    expect(Date.now()).toBeGreaterThanOrEqual(dead.lease.expiresAt);
    expect(invocations.length).toBeGreaterThan(2); // told "in progress" more often than maxAttempts
    expect(await readItem(fixture.table, 'publish#checkout-dead')).toMatchObject({ status: 'COMPLETED' });
    await drainQueue(fixture.sqs, fixture.queueUrl, messages.length);
  });

  it('gives up with PublishInProgressError once the lease would outlast maxLeaseWaitMs', async () => {
    const messages = orders(2, 1);
    await fixture.store.acquire({
      id: 'publish#checkout-held',
      payloadHash: payloadHash(messages),
      leaseMs: 60_000,
      takeOverExpiredLease: true,
    });
    const sends = countRequests(fixture.sqs);

    const error = await publish(messages, {
      ...options(),
      requestId: 'checkout-held',
      maxLeaseWaitMs: 300,
    }).catch((thrown: unknown) => thrown);

    expect(error).toBeInstanceOf(PublishInProgressError);
    expect(error).toMatchObject({ requestId: 'checkout-held', leaseExpiresAt: expect.any(Number) });
    expect(sends.total()).toBe(0);
  });

  it('re-sends unknown messages and their blocked group under their keys: each ends sent, on the queue once', async () => {
    let firstInvocation = true;
    loseSendsOfGroup('customer-lost', () => firstInvocation);
    behaviour = async (event, context, publisher) => {
      try {
        return await publisher(event, context);
      } finally {
        firstInvocation = false;
      }
    };
    loseAnswer(2); // the re-send round's first answer too: its retry must replay it, not send again
    const sends = countRequests(fixture.sqs);
    const messages = lostGroup();

    const { requestId, results } = await publish(messages, options());

    expect(statuses(results)).toEqual(messages.map(() => 'sent'));
    expect(results.map((result) => result.key)).toEqual(messages.map(expectedKey));
    const round1 = `${requestId}~${invocations[0]?.callId}.r1`;
    expect(invocations.map((event) => event.requestId)).toEqual([requestId, round1, round1]);
    // The first invocation's 5 attempts at the first message, then the round's 12 calls; the replay sends nothing.
    expect(sends.counts.SendMessageBatch).toBe(17);
    const first = await readItem(fixture.table, `publish#${requestId}`);
    expect(JSON.parse(first?.result ?? 'null').results.map((r: { status: string }) => r.status)).toEqual([
      'unknown',
      ...Array(11).fill('blocked'),
    ]);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, messages.length); // and not one more
    expect(keysOfGroup(received, 'customer-lost')).toEqual(messages.map(expectedKey));
    // SQS had the lost ones since the first invocation: the re-send was deduplicated to the same message.
    const messageIds = new Map(received.map((message) => [message.envelope.key, message.messageId]));
    for (const result of results) {
      expect(result).toMatchObject({ status: 'sent', messageId: messageIds.get(result.key) });
    }
  });

  it('answers unknown once the re-send rounds run out, naming blockers by their place in the request', async () => {
    hideAnswersOfGroup('customer-lost', () => true);
    const messages = [...orders(10, 1, 'paid'), ...lostGroup()];

    const { requestId, results } = await publish(messages, { ...options(), resendUnknownRounds: 2 });

    const callId = invocations[0]?.callId;
    expect(invocations.map((event) => event.requestId)).toEqual([
      requestId,
      `${requestId}~${callId}.r1`,
      `${requestId}~${callId}.r2`,
    ]);
    expect(statuses(results)).toEqual([...Array(10).fill('sent'), 'unknown', ...Array(11).fill('blocked')]);
    // The last round sent only the lost group: its messages[0] is this request's messages[10].
    expect(results[11]).toMatchObject({
      reason: expect.stringContaining('messages[10] of the same group may not have been sent'),
    });
    await drainQueue(fixture.sqs, fixture.queueUrl, 11); // the lost one is there all the same, once
  });

  it('raises PublishValidationError with every problem, without retrying', async () => {
    const invalid: PublishMessage[] = [
      orders(1, 1)[0] as PublishMessage,
      { type: '', groupId: 'g 1', payload: 1 },
    ];
    const error = await publish(invalid, options()).catch((thrown: unknown) => thrown);

    expect(error).toBeInstanceOf(PublishValidationError);
    expect((error as PublishValidationError).problems).toEqual([
      { index: 1, path: 'messages[1].type', message: 'type must not be empty' },
      {
        index: 1,
        path: 'messages[1].groupId',
        message: 'groupId must be 1–128 printable ASCII characters without spaces',
      },
    ]);
    expect((error as Error).message).toMatch(
      /^The publish request is invalid, nothing was sent: messages\[1\]\.type/,
    );
    expect(invocations).toHaveLength(1);
  });

  it('raises PublishConflictError for a requestId reused with other messages, without retrying', async () => {
    await publish(orders(2, 1), { ...options(), requestId: 'checkout-1' });
    const error = await publish(orders(2, 1, 'refund'), { ...options(), requestId: 'checkout-1' }).catch(
      (thrown: unknown) => thrown,
    );

    expect(error).toBeInstanceOf(PublishConflictError);
    expect(error).toMatchObject({ requestId: 'checkout-1', retryable: false });
    expect(invocations).toHaveLength(2);
  });

  it("raises the AWS SDK's own error for an unknown function, without retrying", async () => {
    const error = await publish(orders(1, 1), { ...options(), functionName: 'no-such-publisher' }).catch(
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ResourceNotFoundException);
    expect(invocations).toHaveLength(0);
  });

  it('refuses an answer that is not a publish response: the function is not the publisher', async () => {
    behaviour = async () => ({ ok: true });
    await expect(publish(orders(1, 1), options())).rejects.toThrow(PublisherResponseError);
    expect(invocations).toHaveLength(1);
  });

  it('says how to name the function when neither an option nor ONCELY_PUBLISHER_FUNCTION does', async () => {
    vi.stubEnv('ONCELY_PUBLISHER_FUNCTION', '');
    const error = await publish(orders(1, 1), { lambda }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(OncelyConfigurationError);
    expect(error).toMatchObject({
      sources: ['ONCELY_PUBLISHER_FUNCTION'],
      message: expect.stringMatching(
        /^No publisher function to invoke: ONCELY_PUBLISHER_FUNCTION is empty\. Pass `functionName` or set ONCELY_PUBLISHER_FUNCTION /,
      ),
    });
  });

  it('finds the endpoint and the function through the environment, as a deployed service would', async () => {
    vi.stubEnv('AWS_ENDPOINT_URL_LAMBDA', endpoint.endpoint);
    vi.stubEnv('AWS_REGION', LOCAL_REGION);
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
    vi.stubEnv('ONCELY_PUBLISHER_FUNCTION', endpoint.functionArn(FUNCTION));

    const { results } = await publish(orders(2, 1));
    expect(statuses(results)).toEqual(['sent', 'sent']);
  });
});

describe('publish: what a result may become, and publishing again (issue 30)', () => {
  it('keeps unknown when a later round fails every attempt: only sent replaces unknown (item 1)', async () => {
    let firstInvocation = true;
    loseSendsOfGroup('customer-lost', () => firstInvocation);
    throttleSends(() => !firstInvocation);
    behaviour = async (event, context, publisher) => {
      try {
        return await publisher(event, context);
      } finally {
        firstInvocation = false;
      }
    };
    const messages = lostGroup();

    const { results } = await publish(messages, options());

    expect(statuses(results)).toEqual(['unknown', ...Array(11).fill('blocked')]);
    // Round 0 answered 1 unknown, 11 blocked; each of the 3 rounds then answered failed and blocked.
    expect(invocations).toHaveLength(4);
    expect(results[1]).toMatchObject({
      reason: expect.stringContaining('messages[0] of the same group may not have been sent'),
    });
    await drainQueue(fixture.sqs, fixture.queueUrl, 1); // the unknown one is on the queue
  });

  it('leaves SQS no later message of a group to accept while it refuses an earlier one (issue 42, item 3)', async () => {
    // Call 1: SQS answers nothing for its entries (maybe sent). Call 2: it fails the first, not
    // enqueued, and accepts the rest. With a group's two messages in one call, the first ended
    // unknown and the second sent ahead of it. One message of a group per call leaves no rest.
    let calls = 0;
    fixture.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'SendMessageBatchCommand') return next(args);
        const input = args.input as SendMessageBatchCommandInput;
        const [first, ...rest] = input.Entries ?? [];
        if (++calls === 1) return { output: { $metadata: {}, Successful: [], Failed: [] }, response: {} };
        if (calls > 2 || !first) return next(args);
        const result =
          rest.length > 0
            ? await next({ ...args, input: { ...input, Entries: rest } })
            : { output: { $metadata: {} }, response: {} };
        const output = result.output as SendMessageBatchCommandOutput;
        const failed = { Id: first.Id, Code: 'InternalError', SenderFault: false, Message: 'injected' };
        return { ...result, output: { ...output, Failed: [...(output.Failed ?? []), failed] } };
      },
      { step: 'initialize', name: 'acceptSecondOnly' },
    );
    const messages = orders(2, 1);

    const { results } = await publish(messages, options());

    expect(statuses(results)).toEqual(['sent', 'sent']);
    expect(invocations).toHaveLength(1);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 2);
    expect(keysOfGroup(received, 'customer-0')).toEqual(messages.map(expectedKey));
  });

  it("names its rounds so that no caller's requestId can be one (item 11b)", async () => {
    // A caller's own request under what used to be the next one's first round id.
    await publish(orders(2, 1, 'other'), { ...options(), requestId: 'checkout-7.r1' });
    let firstInvocation = true;
    loseSendsOfGroup('customer-lost', () => firstInvocation);
    behaviour = async (event, context, publisher) => {
      try {
        return await publisher(event, context);
      } finally {
        firstInvocation = false;
      }
    };
    invocations.length = 0;
    const messages = lostGroup();

    const { results } = await publish(messages, { ...options(), requestId: 'checkout-7' });

    expect(statuses(results)).toEqual(messages.map(() => 'sent'));
    expect(invocations[1]?.requestId).toMatch(/^checkout-7~[0-9a-f-]{36}\.r1$/);
    const refused = await publish(orders(1, 1), { ...options(), requestId: 'checkout~8' }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(PublishValidationError);
    expect(refused).toMatchObject({
      problems: [{ path: 'requestId', message: expect.stringContaining('"~"') }],
    });
    expect(invocations).toHaveLength(2);
  });

  it('publishing again sends a failed message and its blocked group in order: none of them went ahead', async () => {
    // Call 1, every try: SQS fails the first entry, not enqueued, and enqueues the rest without
    // saying so. With a group's two messages in one call, the first ended failed and the second
    // unknown, on the queue ahead of it. One message of a group per call leaves no rest to enqueue.
    let firstCall = true;
    fixture.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'SendMessageBatchCommand' || !firstCall) return next(args);
        const input = args.input as SendMessageBatchCommandInput;
        const [first, ...rest] = input.Entries ?? [];
        const result = await next({ ...args, input: { ...input, Entries: rest } });
        const failed = { Id: first?.Id, Code: 'InternalError', SenderFault: false, Message: 'injected' };
        return { ...result, output: { $metadata: {}, Successful: [], Failed: [failed] } };
      },
      { step: 'initialize', name: 'failFirstHideSecond' },
    );
    const messages = orders(2, 1);
    const first = await publish(messages, { ...options(), requestId: 'checkout-10' });
    expect(statuses(first.results)).toEqual(['failed', 'blocked']);

    firstCall = false;
    const again = await publish(messages, { ...options(), requestId: 'checkout-10' });

    expect(statuses(again.results)).toEqual(['sent', 'sent']);
    expect(invoked().at(-1)).toMatchObject({ messages: 2 });
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 2);
    expect(keysOfGroup(received, 'customer-0')).toEqual(messages.map(expectedKey));
  });

  it('publishing again with the same requestId sends what the first call did not, each message once (item 2)', async () => {
    const messages = [
      ...orders(2, 1, 'fine').map((message) => ({ ...message, groupId: 'customer-fine' })),
      ...orders(3, 1, 'refused').map((message) => ({ ...message, groupId: 'customer-refused' })),
      ...orders(2, 1, 'hidden').map((message) => ({ ...message, groupId: 'customer-hidden' })),
    ];
    let firstCall = true;
    // Call 1: SQS throttles every entry of one group (failed, blocked) and enqueues another's
    // without saying so (unknown, round after round); the first answer is lost on the way back.
    injectEntryFaults(fixture.sqs, ({ groupId }) =>
      firstCall && groupId === 'customer-refused'
        ? { when: 'before-sending', code: 'ThrottlingException', senderFault: true }
        : undefined,
    );
    hideAnswersOfGroup('customer-hidden', () => firstCall);
    loseFirstAnswer();

    const first = await publish(messages, { ...options(), requestId: 'checkout-9' });

    expect(statuses(first.results)).toEqual([
      'sent',
      'sent',
      'failed',
      'blocked',
      'blocked',
      'unknown',
      'blocked',
    ]);
    // The retry within the call replayed round 0 and re-sent no failed message: its rounds carry the unknown two.
    expect(invoked().map((invocation) => invocation.messages)).toEqual([7, 7, 2, 2, 2]);

    firstCall = false;
    invocations.length = 0;
    const again = await publish(messages, { ...options(), requestId: 'checkout-9' });

    expect(statuses(again.results)).toEqual(messages.map(() => 'sent'));
    expect(invoked()).toEqual([
      { requestId: 'checkout-9', messages: 7 },
      { requestId: expect.stringMatching(/^checkout-9~/), messages: 5 },
    ]);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, messages.length); // and not one more
    for (const group of ['customer-fine', 'customer-refused', 'customer-hidden']) {
      expect(keysOfGroup(received, group)).toEqual(
        messages.filter((message) => message.groupId === group).map(expectedKey),
      );
    }
  });
});

describe('publish: rounds that fail, and calls that cannot see each other (issue 42)', () => {
  /** A group of two: the first's answers lost in the first invocation, the second blocked behind it. */
  const pair = () => orders(2, 1, 'pair').map((message) => ({ ...message, groupId: 'customer-pair' }));

  it('a round that fails after its retries leaves its messages unknown: it may have sent them (item 1)', async () => {
    let firstInvocation = true;
    loseSendsOfGroup('customer-pair', () => firstInvocation);
    // Each round publishes, then its invocation dies before it answers: every retry replays, and dies.
    behaviour = async (event, context, publisher) => {
      if (firstInvocation) {
        try {
          return await publisher(event, context);
        } finally {
          firstInvocation = false;
        }
      }
      await publisher(event, context);
      throw new Error('the invocation died after publishing');
    };
    const messages = pair();

    const { results } = await publish(messages, { ...options(), retry: { ...FAST, maxAttempts: 3 } });

    // The round sent the blocked one, though no answer said so: it is unknown, never blocked.
    expect(statuses(results)).toEqual(['unknown', 'unknown']);
    expect(results[1]).toMatchObject({ reason: expect.stringContaining('the round that re-sent it failed') });
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 2);
    expect(keysOfGroup(received, 'customer-pair')).toEqual(messages.map(expectedKey));
  });

  it('a repeat call never calls certain what an earlier call it cannot see may have sent (item 2)', async () => {
    let firstInvocation = true;
    loseSendsOfGroup('customer-pair', () => firstInvocation);
    behaviour = async (event, context, publisher) => {
      try {
        return await publisher(event, context);
      } finally {
        firstInvocation = false;
      }
    };
    const messages = pair();
    // The first call's round sends both; the repeat call sees only the first call's first response.
    const first = await publish(messages, { ...options(), requestId: 'checkout-42-2' });
    expect(statuses(first.results)).toEqual(['sent', 'sent']);
    // Now SQS refuses the group for good: the repeat's own round fails the first and blocks the second.
    injectEntryFaults(fixture.sqs, ({ groupId }) =>
      groupId === 'customer-pair'
        ? { when: 'before-sending', code: 'InvalidMessageContents', senderFault: true }
        : undefined,
    );

    const again = await publish(messages, { ...options(), requestId: 'checkout-42-2' });

    expect(statuses(again.results)).toEqual(['unknown', 'unknown']);
    expect(again.results[1]).toMatchObject({
      reason: expect.stringContaining('an earlier call with this requestId may have sent it'),
    });
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 2);
    expect(keysOfGroup(received, 'customer-pair')).toEqual(messages.map(expectedKey));
  });
});

describe('publish: a stalled Invoke (issue 30, item 8)', () => {
  let proxy: FaultProxy;
  let viaProxy: LambdaClient;

  beforeEach(async () => {
    // The fault proxy forwards any HTTP request: here Lambda's Invoke, whose first one it holds
    // unforwarded, as a half-open connection would. `service` only shapes its error answers.
    proxy = await startFaultProxy({ service: 'sqs', upstream: endpoint.endpoint });
    proxy.setPlan(targetedFaultPlan({ match: () => true, fault: { kind: 'hang' }, times: 1 }));
    viaProxy = new LambdaClient({ ...localAwsConfig(proxy.endpoint), maxAttempts: 1 });
  });

  afterEach(async () => {
    viaProxy.destroy();
    await proxy.close();
  });

  it('is cut off after invokeTimeoutMs and retried with the same requestId; nothing lands twice', async () => {
    const messages = orders(3, 1);

    const { requestId, results } = await publish(messages, {
      ...options(),
      lambda: viaProxy,
      invokeTimeoutMs: 300,
    });

    expect(statuses(results)).toEqual(['sent', 'sent', 'sent']);
    expect(proxy.stats().requests.Unknown).toBe(2); // the stalled Invoke and its retry
    expect(invocations.map((event) => event.requestId)).toEqual([requestId]);
    // The stalled Invoke goes on late, as a connection that wakes up: it replays, sends nothing.
    proxy.releaseHung();
    await expect.poll(() => invocations.length, { timeout: 60_000 }).toBe(2);
    await drainQueue(fixture.sqs, fixture.queueUrl, messages.length);
  });

  it('gives up with PublisherTimeoutError once every attempt stalls', async () => {
    proxy.setPlan(() => ({ kind: 'hang' }));

    const error = await publish(orders(1, 1), {
      ...options(),
      lambda: viaProxy,
      invokeTimeoutMs: 100,
      retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
    }).catch((thrown: unknown) => thrown);

    expect(error).toBeInstanceOf(PublisherTimeoutError);
    expect(error).toMatchObject({ retryable: true, timeoutMs: 100 });
    expect(proxy.stats().requests.Unknown).toBe(2);
  });
});
