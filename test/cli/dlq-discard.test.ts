import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discardDeadLetters } from '../../cli/dead-letter-discard.js';
import type { RedriveResult } from '../../cli/dead-letter-redrive.js';
import { localDynamoClient, readItem } from '../support/dynamodb.js';
import { type DlqWorld, deadLetter, drain, envelopeBody, PAST, startDlqWorld } from './dlq-fifo.js';
import { beforeRequests, fail, once } from './sdk-faults.js';

// Item 5 of issue 31: a message past the dedup horizon stays in the DLQ until `oncely dlq discard`
// deletes it for good, keeping a record of it in the idempotency table.

let world: DlqWorld;
beforeAll(async () => {
  world = await startDlqWorld();
});
afterAll(() => world?.stop());

describe('oncely dlq discard', () => {
  it('deletes what a redrive left past the horizon, recorded with its body and reason; then the DLQ empties', async () => {
    const pipeline = await world.pipeline();
    const body = envelopeBody('old-1', 'old', PAST);
    const id = await deadLetter(world.sqs, pipeline.dlqUrl, body, 'old');
    const redrive = JSON.parse(
      (await world.oncely(pipeline, ['dlq', 'redrive', '--json'])).text,
    ) as RedriveResult;
    expect(redrive.skipped).toEqual([
      { messageId: id, groupId: 'old', key: 'old-1', reason: 'past-dedup-horizon' },
    ]);
    const text = (await world.oncely(pipeline, ['dlq', 'redrive'])).text;
    expect(text).toContain(`  ${id} (group old, key old-1)`);
    expect(text).toContain('`oncely dlq discard MESSAGE_ID…` deletes it for good');

    const discard = await world.oncely(pipeline, [
      'dlq',
      'discard',
      id,
      'not-there',
      '--reason',
      'ticket 42: refunded',
    ]);
    expect(discard.code).toBe(3); // one id was not found
    expect(discard.text).toContain(
      `Discarded ${id} (group old, key old-1): deleted from the DLQ, recorded as oncely/discarded#${id}`,
    );
    expect(discard.text).toContain('Not found in the DLQ: not-there.');
    expect(await readItem(pipeline.idempotencyTableName, `oncely/discarded#${id}`)).toMatchObject({
      groupId: 'old',
      key: 'old-1',
      body,
      reason: 'ticket 42: refunded',
      errorName: 'HandlerError',
      discardedAt: expect.stringMatching(/^\d{4}-/),
    });
    expect(await drain(world.sqs, pipeline.dlqUrl)).toEqual([]);
    expect((await world.oncely(pipeline, ['dlq', 'redrive'])).code).toBe(0);
  });

  it('killed between its record and its delete, it leaves both; a second run deletes the message', async () => {
    const pipeline = await world.pipeline();
    const id = await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody('old-2', 'old', PAST), 'old');
    const sqs = world.client();
    beforeRequests(
      sqs,
      once((input) => input.QueueUrl === pipeline.dlqUrl && 'Entries' in input),
      fail,
    );
    const dynamodb = localDynamoClient();
    await expect(discardDeadLetters({ sqs, dynamodb }, pipeline, [id], 'cut')).rejects.toThrow('injected');
    expect(await readItem(pipeline.idempotencyTableName, `oncely/discarded#${id}`)).toMatchObject({
      reason: 'cut',
    });
    expect(await discardDeadLetters({ sqs, dynamodb }, pipeline, [id], 'cut')).toMatchObject({
      notFound: [],
    });
    dynamodb.destroy();
    expect(await drain(world.sqs, pipeline.dlqUrl)).toEqual([]);
  });

  // Issue 42, item 7: a message held by a redrive or a listing was "not found: already discarded or
  // redriven", with no discard record, while it was still in the DLQ.
  it('says a message it did not find may be held elsewhere, and tells one already discarded apart', async () => {
    const pipeline = await world.pipeline();
    const held = await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody('held-1', 'held', PAST), 'held');
    const gone = await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody('gone-1', 'gone', PAST), 'gone');
    expect((await world.oncely(pipeline, ['dlq', 'discard', gone, '--reason', 'first'])).code).toBe(0);
    // Another operator's listing holds the other one.
    const { Messages = [] } = await world.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: pipeline.dlqUrl, VisibilityTimeout: 120 }),
    );
    expect(Messages.map((message) => message.MessageId)).toEqual([held]);

    const run = await world.oncely(pipeline, [
      'dlq',
      'discard',
      held,
      gone,
      '--reason',
      'second',
      '--timeout',
      '2',
      '--json',
    ]);
    expect(run.code).toBe(3);
    expect(JSON.parse(run.text)).toEqual({
      discarded: [],
      alreadyDiscarded: [gone],
      notFound: [held],
      hidden: 1,
    });
    const text = await world.oncely(pipeline, [
      'dlq',
      'discard',
      held,
      gone,
      '--reason',
      'third',
      '--timeout',
      '2',
    ]);
    expect(text.text).toContain(`Already discarded: ${gone} (its record is oncely/discarded#${gone}).`);
    expect(text.text).toContain(
      `Not found in the DLQ: ${held}. 1 message is in flight elsewhere (a redrive, a listing): it may be ` +
        'one of them. Run `oncely dlq discard` again once they are done (a listing lets go within 60 s).',
    );
    expect(text.text).not.toContain('Already discarded or redriven');
    expect(await readItem(pipeline.idempotencyTableName, `oncely/discarded#${held}`)).toBeUndefined();
  });
});
