import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Resolution, resolveAsCompleted } from '../../cli/in-doubt-records.js';
import { resolveAsRetry } from '../../cli/in-doubt-retry.js';
import { RecordNotInDoubtError, ResolutionConflictError } from '../../cli/operations-errors.js';
import { describeResolution } from '../../cli/operations-report.js';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import { inDoubtPipeline, park } from './in-doubt-support.js';
import { beforeRequests, once, type RequestInput } from './sdk-faults.js';

// Item 6b of issue 31: two operators resolve one record at once. Each command's output must say what
// is true when it ends: a record now COMPLETED is never reported as "the consumer runs it again".
// The retry's steps: a read, (a) mark RETRY_PENDING, (b) send, (c) clear the mark; the other
// command runs whole before one of them, through a hook on the retry's own client.

/** A pipeline per test: each counts the messages on its own queue. */
let target: Awaited<ReturnType<typeof inDoubtPipeline>>;
let other: Awaited<ReturnType<typeof inDoubtPipeline>>;

beforeAll(async () => {
  target = await inDoubtPipeline();
  // The second operator: clients of its own on the same table and queue.
  other = await inDoubtPipeline();
  other.resources = target.resources;
});
afterAll(() => {
  target?.close();
  other?.close();
});

async function record(id: string): Promise<IdempotencyRecord | undefined> {
  const { Item } = await DynamoDBDocumentClient.from(other.dynamodb).send(
    new GetCommand({ TableName: target.resources.idempotencyTableName, Key: { id }, ConsistentRead: true }),
  );
  return Item as IdempotencyRecord | undefined;
}

/** The messages of `groupId` now on the queue (received, so hidden from the next test's count). */
async function sentTo(groupId: string): Promise<number> {
  const { Messages = [] } = await other.sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: target.resources.queueUrl,
      MaxNumberOfMessages: 10,
      MessageSystemAttributeNames: ['MessageGroupId'],
    }),
  );
  return Messages.filter((message) => message.Attributes?.MessageGroupId === groupId).length;
}

const markRetryPending = (input: RequestInput) =>
  String(input.UpdateExpression).startsWith('SET #status = :failed');
const send = (input: RequestInput) => typeof input.MessageBody === 'string';
const clearMark = (input: RequestInput) =>
  String(input.UpdateExpression).startsWith('SET expiresAt = :expiresAt, history');
const complete = (input: RequestInput) =>
  String(input.UpdateExpression).startsWith('SET #status = :completed');

/** A fresh retry target whose clients run `act` once, before the first request `step` picks. */
async function retryWith(step: (input: RequestInput) => boolean, act: () => Promise<unknown>) {
  const retrying = await inDoubtPipeline();
  retrying.resources = target.resources;
  const client = step === send ? retrying.sqs : retrying.dynamodb;
  beforeRequests(client, once(step), async () => {
    await act();
  });
  return retrying;
}

describe('--as retry racing --as completed', () => {
  it('completed before (a): the retry is refused as a conflict and sends nothing', async () => {
    const id = await park(target, 'race-a');
    const retrying = await retryWith(markRetryPending, () => resolveAsCompleted(other, id));
    const retry = resolveAsRetry(retrying, id);
    await expect(retry).rejects.toThrow(ResolutionConflictError);
    await expect(retry).rejects.toThrow(/is now COMPLETED .*Nothing was sent/);
    expect(await record(id)).toMatchObject({ status: 'COMPLETED' });
    expect(await sentTo('group-race-a')).toBe(0);
    retrying.close();
  });

  for (const [step, name] of [
    [send, 'before (b), the send'],
    [clearMark, 'before (c), the clearing'],
  ] as const) {
    it(`completed ${name}: the retry says the record is COMPLETED and its copy a duplicate`, async () => {
      const key = step === send ? 'race-b' : 'race-c';
      const id = await park(target, key);
      const retrying = await retryWith(step, () => resolveAsCompleted(other, id));

      const resolution = await resolveAsRetry(retrying, id);

      expect(resolution).toMatchObject({ as: 'retry', status: 'COMPLETED' });
      const said = describeResolution(resolution, 'queue');
      expect(said).not.toContain('runs it again');
      expect(said).toMatch(
        /the record is now COMPLETED .* takes this copy for a duplicate and does not run it\.$/,
      );
      expect(await record(id)).toMatchObject({ status: 'COMPLETED' });
      expect(await record(id)).not.toHaveProperty('unresolved');
      expect(await sentTo(`group-${key}`)).toBe(1);
      retrying.close();
    });
  }

  it('completed after the retry: refused, saying the retry already sent it', async () => {
    const id = await park(target, 'race-d');
    expect(await resolveAsRetry(other, id)).toMatchObject({ status: 'FAILED' });
    const completed = resolveAsCompleted(other, id);
    await expect(completed).rejects.toThrow(RecordNotInDoubtError);
    await expect(completed).rejects.toThrow(/is FAILED, not IN_DOUBT: .*the consumer runs it/);
    expect(await sentTo('group-race-d')).toBe(1);
  });

  it('retry before completed writes: completed is refused, naming the record as it is now', async () => {
    const id = await park(target, 'race-e');
    const completing = await inDoubtPipeline();
    completing.resources = target.resources;
    let retried: Resolution | undefined;
    beforeRequests(completing.dynamodb, once(complete), async () => {
      retried = await resolveAsRetry(other, id);
    });
    const completed = resolveAsCompleted(completing, id);
    await expect(completed).rejects.toThrow(ResolutionConflictError);
    await expect(completed).rejects.toThrow(/it is now FAILED /);
    expect(retried).toMatchObject({ status: 'FAILED' });
    expect(await record(id)).toMatchObject({ status: 'FAILED' });
    completing.close();
  });

  it('two retries at once: both send, both say the consumer runs it (one copy runs, the other is a duplicate)', async () => {
    const id = await park(target, 'race-f');
    let first: Resolution | undefined;
    const retrying = await retryWith(send, async () => {
      first = await resolveAsRetry(other, id);
    });
    const second = await resolveAsRetry(retrying, id);
    expect(first).toMatchObject({ status: 'FAILED' });
    expect(second).toMatchObject({ status: 'FAILED' });
    expect(describeResolution(second, 'queue')).toContain(
      'the record is FAILED, so the consumer runs it again',
    );
    expect(await record(id)).toMatchObject({ status: 'FAILED' });
    expect(await record(id)).not.toHaveProperty('unresolved');
    expect(await sentTo('group-race-f')).toBe(2);
    retrying.close();
  });
});
