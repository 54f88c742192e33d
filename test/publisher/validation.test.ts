import { describe, expect, it } from 'vitest';
import { MAX_MESSAGES_PER_REQUEST } from '../../lambdas/publisher/contract.js';
import { PublishValidationError, publisherErrorFromFunctionError } from '../../lambdas/publisher/errors.js';
import { countRequests } from '../../sandbox/request-counter.js';
import { readItem } from '../support/dynamodb.js';
import { lambdaContext } from '../support/lambda-context.js';
import { usePublisherFixture } from '../support/publisher.js';

const fixture = usePublisherFixture();

const valid = { type: 'OrderPlaced', groupId: 'customer-1', key: 'order-1', payload: { cents: 100 } };
const others = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ ...valid, key: `order-${i + 2}` }));

/** Arrays within arrays, `depth` levels deep, as JSON.parse builds them from a request. */
function nested(depth: number): unknown {
  return JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);
}

/** Publishes `request` and returns the validation error it must be refused with, having sent and recorded nothing. */
async function refusal(request: unknown): Promise<PublishValidationError> {
  const sends = countRequests(fixture.sqs);
  const records = countRequests(fixture.dynamodb);
  const error = await fixture
    .publisher()(request, lambdaContext())
    .then(() => expect.fail('the request was accepted'))
    .catch((thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(PublishValidationError);
  expect(sends.total()).toBe(0);
  expect(records.total()).toBe(0);
  return error as PublishValidationError;
}

describe('publisher: validation', () => {
  it.each([
    [
      'a request that is not an object',
      'publish!',
      { path: 'request', message: 'the request must be an object' },
    ],
    ['no messages', { requestId: 'r1' }, { path: 'messages', message: 'messages is required' }],
    [
      'an empty list',
      { messages: [] },
      { path: 'messages', message: 'a request needs at least one message' },
    ],
    [
      'too many messages',
      { messages: others(MAX_MESSAGES_PER_REQUEST + 1) },
      { path: 'messages', message: 'at most 500 messages per request: split them into several requests' },
    ],
    [
      'an unknown request field',
      { messages: [valid], priority: 'high' },
      {
        path: 'request',
        message:
          'the request has unknown field "priority" (its fields: requestId, callId, traceContext, messages)',
      },
    ],
    [
      'a callId with a space',
      { callId: 'call 1', messages: [valid] },
      { path: 'callId', message: 'callId must be 1–128 printable ASCII characters without spaces' },
    ],
    [
      'a requestId with a space',
      { requestId: 'checkout 42', messages: [valid] },
      { path: 'requestId', message: 'requestId must be 1–128 printable ASCII characters without spaces' },
    ],
    [
      'a requestId over 128 characters',
      { requestId: 'r'.repeat(129), messages: [valid] },
      { path: 'requestId', message: 'requestId must be 1–128 printable ASCII characters without spaces' },
    ],
    [
      'a requestId that is not a string',
      { requestId: 42, messages: [valid] },
      { path: 'requestId', message: 'requestId must be a string' },
    ],
  ])('refuses %s', async (_, request, problem) => {
    const error = await refusal(request);
    expect(error.problems).toContainEqual(problem);
  });

  it.each([
    [
      'a message that is not an object',
      'OrderPlaced',
      { path: 'messages[1]', message: 'a message must be an object' },
    ],
    [
      'a missing type',
      { ...valid, type: undefined },
      { path: 'messages[1].type', message: 'type is required' },
    ],
    [
      'an empty type',
      { ...valid, type: '' },
      { path: 'messages[1].type', message: 'type must not be empty' },
    ],
    [
      'a type over 128 characters',
      { ...valid, type: 'T'.repeat(129) },
      { path: 'messages[1].type', message: 'type must be at most 128 characters' },
    ],
    [
      'a missing groupId',
      { ...valid, groupId: undefined },
      { path: 'messages[1].groupId', message: 'groupId is required' },
    ],
    [
      'a groupId with a space',
      { ...valid, groupId: 'customer 1' },
      {
        path: 'messages[1].groupId',
        message: 'groupId must be 1–128 printable ASCII characters without spaces',
      },
    ],
    [
      'a groupId over 128 characters',
      { ...valid, groupId: 'g'.repeat(129) },
      {
        path: 'messages[1].groupId',
        message: 'groupId must be 1–128 printable ASCII characters without spaces',
      },
    ],
    [
      'a key with a non-ASCII character',
      { ...valid, key: 'commande-é' },
      { path: 'messages[1].key', message: 'key must be 1–128 printable ASCII characters without spaces' },
    ],
    [
      'a key over 128 characters',
      { ...valid, key: 'k'.repeat(129) },
      { path: 'messages[1].key', message: 'key must be 1–128 printable ASCII characters without spaces' },
    ],
    [
      'a missing payload',
      { ...valid, payload: undefined },
      { path: 'messages[1].payload', message: 'payload is required' },
    ],
    [
      'an unknown message field',
      { ...valid, delaySeconds: 5 },
      {
        path: 'messages[1]',
        message: 'a message has unknown field "delaySeconds" (its fields: type, groupId, key, payload)',
      },
    ],
    [
      'a body over the queue limit',
      { ...valid, payload: 'x'.repeat(262_144) },
      {
        path: 'messages[1]',
        message: expect.stringMatching(
          /^its SQS body is \d+ bytes, over the queue's limit of 262144 bytes: make the payload smaller/,
        ),
      },
    ],
    [
      'a character SQS refuses',
      { ...valid, payload: { note: 'bad \uffff' } },
      {
        path: 'messages[1]',
        message: 'its type or payload contains U+FFFE or U+FFFF, characters SQS refuses in a message body',
      },
    ],
    [
      'a key used twice',
      { ...valid, key: 'order-2', payload: { cents: 1 } },
      {
        path: 'messages[1]',
        message:
          'its key "order-2" is also the key of messages[0]: it would be dropped as a duplicate (by SQS on a FIFO queue, by the consumer on any). Give each message its own key',
      },
    ],
  ])('refuses %s, naming its index', async (_, message, problem) => {
    const first = { ...valid, key: 'order-2' };
    const error = await refusal({ messages: [first, message, { ...valid, key: 'order-3' }] });
    expect(error.problems).toEqual([{ index: 1, ...problem }]);
  });

  it('refuses two identical messages without keys: their derived keys are equal', async () => {
    const { key: _, ...keyless } = valid;
    const error = await refusal({ messages: [keyless, valid, keyless] });
    expect(error.problems).toEqual([
      {
        index: 2,
        path: 'messages[2]',
        message:
          'it has the same type, groupId and payload as messages[0], so the same derived key: ' +
          'it would be dropped as a duplicate (by SQS on a FIFO queue, by the consumer on any). Give each message its own key',
      },
    ]);
  });

  it("measures bodies against the configured queue's maximum message size", async () => {
    const small = fixture.publisher({ maxMessageBytes: 1_024 });
    const error = await small(
      { messages: [{ ...valid, payload: 'x'.repeat(1_000) }] },
      lambdaContext(),
    ).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({
      problems: [{ index: 0, message: expect.stringContaining('limit of 1024 bytes') }],
    });
  });

  it('lists every problem of the request in one error that crosses the Lambda boundary intact', async () => {
    const error = await refusal({
      requestId: 'has space',
      messages: [valid, { ...valid, key: 'order-2', groupId: '' }, { type: 'T', payload: null }],
    });
    expect(error.problems).toEqual([
      { path: 'requestId', message: 'requestId must be 1–128 printable ASCII characters without spaces' },
      {
        index: 1,
        path: 'messages[1].groupId',
        message: 'groupId must be 1–128 printable ASCII characters without spaces',
      },
      { index: 2, path: 'messages[2].groupId', message: 'groupId is required' },
    ]);
    expect(error.message.split('\n')[0]).toContain('messages[2].groupId: groupId is required');
    expect(publisherErrorFromFunctionError(error.name, error.message)).toEqual(error);
  });

  it('refuses a payload nested thousands of levels deep as a problem of that message, without overflowing', async () => {
    const error = await refusal({
      requestId: 'checkout-deep',
      messages: [valid, { ...valid, key: 'order-2', payload: { document: nested(10_000) } }],
    });
    expect(error.problems).toEqual([
      {
        index: 1,
        path: 'messages[1].payload',
        message:
          'payload nests arrays and objects more than 64 levels deep: flatten it, or send a reference to where the document is stored',
      },
    ]);
    expect(await readItem(fixture.table, 'publish#checkout-deep')).toBeUndefined();
  });

  it('accepts a payload nested 64 levels deep, and refuses one level more', async () => {
    const { results } = await fixture.publisher()(
      { messages: [{ ...valid, payload: nested(64) }] },
      lambdaContext(),
    );
    expect(results.map((result) => result.status)).toEqual(['sent']);

    const error = await refusal({ messages: [{ ...valid, payload: { within: nested(64) } }] });
    expect(error.problems).toMatchObject([{ index: 0, path: 'messages[0].payload' }]);
  });

  it('validates before request idempotency: an invalid request leaves no record', async () => {
    await refusal({ requestId: 'checkout-1', messages: [{ ...valid, groupId: '' }] });
    expect(await readItem(fixture.table, 'publish#checkout-1')).toBeUndefined();
  });
});
