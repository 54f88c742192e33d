import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliUsageError, parseCommandLine } from '../../cli/command-line.js';
import { resolveAsRetry } from '../../cli/in-doubt-retry.js';
import { RetryPastHorizonError } from '../../cli/operations-errors.js';
import { describeResolution } from '../../cli/operations-report.js';
import { isPastDedupHorizon } from '../../lambdas/common/dedup-horizon.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import { envelope, inDoubtPipeline, park, TTL_SECONDS } from './in-doubt-support.js';

// Item 3 of issue 31: a record parked long ago keeps a message whose `publishedAt` is past the dedup
// horizon; sent as it is, the consumer dead-letters it as PastDedupHorizon before any request, the
// record stays FAILED off the list, and the effect silently never happens.

let target: Awaited<ReturnType<typeof inDoubtPipeline>>;

beforeAll(async () => {
  target = await inDoubtPipeline();
});
afterAll(() => target?.close());

async function record(id: string): Promise<IdempotencyRecord | undefined> {
  const { Item } = await DynamoDBDocumentClient.from(target.dynamodb).send(
    new GetCommand({ TableName: target.resources.idempotencyTableName, Key: { id }, ConsistentRead: true }),
  );
  return Item as IdempotencyRecord | undefined;
}

/** Published 20 days ago: past the 19-day TTL's horizon. */
const longAgo = () => new Date(Date.now() - 20 * 24 * 3600 * 1000).toISOString();

describe('resolve --as retry past the dedup horizon', () => {
  it('is refused with the reason and what to do, and changes nothing', async () => {
    const id = await park(target, 'old', {
      message: { body: envelope('old', 'group-old', longAgo()), groupId: 'group-old' },
    });
    const before = await record(id);

    const refused = resolveAsRetry(target, id);

    await expect(refused).rejects.toThrow(RetryPastHorizonError);
    await expect(refused).rejects.toThrow(
      new RegExp(
        `^${id}: its message was published at \\S+Z, past the dedup horizon \\(\\S+Z\\): the consumer would ` +
          'dead-letter it as PastDedupHorizon without running it\\. Nothing was changed\\. If the effect did not ' +
          `happen, run \`oncely in-doubt resolve ${id} --as retry --republish\``,
      ),
    );
    expect(await record(id)).toEqual(before);
    expect(await messagesInQueue(target.sqs, target.resources.queueUrl)).toBe(0);
  });

  it('is refused within an hour of the horizon too: the consumer may receive it only later', async () => {
    const nearly = new Date(Date.now() - (TTL_SECONDS - 3600 - 1800) * 1000).toISOString();
    const id = await park(target, 'nearly', {
      message: { body: envelope('nearly', 'group-n', nearly), groupId: 'group-n' },
    });
    await expect(resolveAsRetry(target, id)).rejects.toThrow(RetryPastHorizonError);
    expect(await record(id)).toMatchObject({ status: 'IN_DOUBT' });
  });

  it('--republish sends it stamped now under the same key; the record outlives that copy’s horizon', async () => {
    const body = envelope('again', 'group-again', longAgo());
    const id = await park(target, 'again', { message: { body, groupId: 'group-again' } });

    const resolution = await resolveAsRetry(target, id, { republish: true });

    expect(resolution).toMatchObject({ id, as: 'retry', groupId: 'group-again', republished: true });
    const { Messages = [] } = await target.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: target.resources.queueUrl, MaxNumberOfMessages: 10 }),
    );
    expect(Messages).toHaveLength(1);
    const sent = JSON.parse(Messages[0]?.Body ?? '{}');
    // Everything but publishedAt is the kept message's, the key included.
    expect({ ...sent, publishedAt: undefined }).toEqual({ ...JSON.parse(body), publishedAt: undefined });
    expect(isPastDedupHorizon(sent.publishedAt, { ttlSeconds: TTL_SECONDS }, Date.now())).toBe(false);
    const after = await record(id);
    expect(after).toMatchObject({ status: 'FAILED' });
    expect(describeResolution(resolution, 'queue')).toMatch(
      /^\S+: its message is back on queue, stamped now \(group group-again,/,
    );
    expect(after?.expiresAt).toBeGreaterThanOrEqual(
      Math.floor(Date.parse(sent.publishedAt) / 1000) + TTL_SECONDS,
    );
  });

  it('--republish is an option of --as retry only', () => {
    const resolve = (...args: string[]) =>
      parseCommandLine(['in-doubt', 'resolve', 'n#k', ...args, '--stack', 's'], {});
    expect(resolve('--as', 'retry', '--republish')).toMatchObject({ as: 'retry', republish: true });
    expect(resolve('--as', 'retry')).toMatchObject({ as: 'retry', republish: false });
    expect(() => resolve('--as', 'completed', '--republish')).toThrow(
      new CliUsageError('--republish goes with --as retry only.'),
    );
  });

  it('a message within the horizon is sent as it was kept', async () => {
    const body = envelope('recent', 'group-recent');
    const id = await park(target, 'recent', { message: { body, groupId: 'group-recent' } });
    const resolution = await resolveAsRetry(target, id);
    expect(resolution).not.toHaveProperty('republished');
    const { Messages = [] } = await target.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: target.resources.queueUrl, MaxNumberOfMessages: 10 }),
    );
    expect(Messages.map((message) => message.Body)).toContain(body);
  });
});
