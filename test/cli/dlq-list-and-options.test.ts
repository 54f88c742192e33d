import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliUsageError, parseCommandLine } from '../../cli/command-line.js';
import type { DeadLetterListing } from '../../cli/dead-letter-list.js';
import type { RedriveResult } from '../../cli/dead-letter-redrive.js';
import { describeDeadLetters } from '../../cli/operations-report.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import {
  type DlqPipeline,
  type DlqWorld,
  deadLetter,
  drain,
  envelopeBody,
  startDlqWorld,
} from './dlq-fifo.js';

// Items 4 (for `dlq list`), 7, 8b and 9a (`dlq list`'s limit) of issue 31: what `oncely dlq list` and
// `oncely dlq redrive` print and exit with, their options, and the confirmation before a large redrive.

let world: DlqWorld;
beforeAll(async () => {
  world = await startDlqWorld();
});
afterAll(() => world?.stop());

async function fill(pipeline: DlqPipeline, groups: number, perGroup = 1): Promise<void> {
  for (let g = 0; g < groups; g++) {
    for (let m = 0; m < perGroup; m++) {
      await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody(`k${g}-${m}`, `g${g}`), `g${g}`);
    }
  }
}

const parsed = <T>(run: { code: number; text: string }) => ({
  code: run.code,
  result: JSON.parse(run.text) as T,
});

describe('oncely dlq list', () => {
  it('lists every group, one per receive, and exits 0; a long group or a concurrent holder makes it partial, exit 3', async () => {
    const pipeline = await world.pipeline();
    await fill(pipeline, 12);
    const whole = parsed<DeadLetterListing>(await world.oncely(pipeline, ['dlq', 'list', '--json']));
    expect(whole.code).toBe(0);
    expect(whole.result).toMatchObject({ end: 'complete', left: 0, hidden: 0 });
    expect(whole.result.messages).toHaveLength(12);

    // A group of 13: a receive reaches its first 10 only.
    const long = await world.pipeline();
    await fill(long, 1, 13);
    const partial = parsed<DeadLetterListing>(await world.oncely(long, ['dlq', 'list', '--json']));
    expect(partial).toMatchObject({ code: 3, result: { end: 'blocked', left: 3, hidden: 0 } });
    expect(partial.result.messages).toHaveLength(10);
    expect(describeDeadLetters(partial.result)).toContain(
      '3 more messages not listed: a FIFO queue hands out each group from its head only',
    );

    // Another operator holds the group: nothing listed, and the listing says so rather than "empty".
    const { Messages = [] } = await world.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: long.dlqUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }),
    );
    expect(Messages).toHaveLength(10);
    const held = await world.oncely(long, ['dlq', 'list', '--timeout', '2']);
    expect(held.code).toBe(3);
    expect(held.text).toContain('10 messages in flight elsewhere (a redrive, another listing) not listed.');
    expect(held.text).toContain('The listing ran out of time before it saw every message.');
    expect(held.text).not.toContain('The DLQ is empty');
  });

  it('stops at --limit (exit 3 when more are left), cuts bodies in the table only, and shows the consumer’s receive count', async () => {
    const pipeline = await world.pipeline();
    await fill(pipeline, 4);
    await deadLetter(world.sqs, pipeline.dlqUrl, 'x'.repeat(500), 'moved-by-sqs', {});
    const limited = parsed<DeadLetterListing>(
      await world.oncely(pipeline, ['dlq', 'list', '--limit', '3', '--json']),
    );
    expect(limited).toMatchObject({ code: 3, result: { end: 'limit' } });
    expect(limited.result.messages).toHaveLength(3);

    const all = parsed<DeadLetterListing>(await world.oncely(pipeline, ['dlq', 'list', '--json']));
    const bodyOf = (listing: DeadLetterListing) =>
      listing.messages.find((m) => m.groupId === 'moved-by-sqs')?.body;
    expect(bodyOf(all.result)).toBe('x'.repeat(500));
    const table = await world.oncely(pipeline, ['dlq', 'list']);
    expect(table.code).toBe(0);
    expect(table.text).toContain(`${'x'.repeat(60)}…`);
    expect(table.text).not.toContain('x'.repeat(61));
    // Listed three times now, yet RECEIVES is the consumer's count (3), or "-" where SQS moved the message.
    expect(table.text).toMatch(/ g0 +SendNotification +k0-0 +3 /);
    expect(table.text).toMatch(/ moved-by-sqs +\(not an envelope\) +- +- /);
  });
});

describe('oncely dlq redrive options', () => {
  it('--dry-run moves nothing; --group and --key move only theirs; --limit stops after N, exit 0 with the rest not selected', async () => {
    const pipeline = await world.pipeline();
    await fill(pipeline, 4, 2);
    const dry = parsed<RedriveResult>(
      await world.oncely(pipeline, ['dlq', 'redrive', '--dry-run', '--json']),
    );
    expect(dry).toMatchObject({ code: 0, result: { dryRun: true, moved: 8, finished: true } });
    expect(await messagesInQueue(world.sqs, pipeline.queueUrl)).toBe(0);

    const group = parsed<RedriveResult>(
      await world.oncely(pipeline, ['dlq', 'redrive', '--group', 'g1', '--json']),
    );
    expect(group).toMatchObject({ code: 0, result: { moved: 2, notSelected: 6, finished: true } });
    const key = parsed<RedriveResult>(
      await world.oncely(pipeline, ['dlq', 'redrive', '--key', 'k2-0', '--json']),
    );
    expect(key).toMatchObject({ code: 0, result: { moved: 1, notSelected: 5, finished: true } });
    expect((await drain(world.sqs, pipeline.queueUrl)).map((m) => m.key)).toEqual(['k1-0', 'k1-1', 'k2-0']);

    const limited = parsed<RedriveResult>(
      await world.oncely(pipeline, ['dlq', 'redrive', '--limit', '2', '--json']),
    );
    // Issue 42, item 4: what --limit leaves is not the run's to move (the exit-code table).
    expect(limited).toMatchObject({ code: 0, result: { moved: 2, finished: true, left: 0, notSelected: 3 } });
    const text = await world.oncely(pipeline, ['dlq', 'redrive']);
    expect(text).toMatchObject({ code: 0 });
    expect(text.text).toMatch(/^Moved 3 messages from the DLQ back to /);
    expect(text.text).toContain('Finished: the DLQ holds nothing this redrive should move.');
  });

  // Issue 42, item 4: a group of more than 10 that a redrive does not select keeps its later
  // messages out of reach; they are not the redrive's to move, so it finishes.
  it('finishes --group and --key while a group it does not move holds more than 10; an unfound key says where it may wait', async () => {
    const pipeline = await world.pipeline();
    await fill(pipeline, 1, 12);
    const mine = ['mine-0', 'mine-1', 'mine-2'];
    for (const key of mine) await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody(key, 'mine'), 'mine');

    const group = parsed<RedriveResult>(
      await world.oncely(pipeline, ['dlq', 'redrive', '--group', 'mine', '--limit', '2', '--json']),
    );
    expect(group).toMatchObject({ code: 0, result: { moved: 2, finished: true, left: 0, hidden: 0 } });
    const rest = parsed<RedriveResult>(
      await world.oncely(pipeline, ['dlq', 'redrive', '--group', 'mine', '--yes', '--json']),
    );
    expect(rest).toMatchObject({
      code: 0,
      result: { moved: 1, notSelected: 12, finished: true, left: 0, hidden: 0, waitingBehind: [] },
    });

    await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody('mine-3', 'mine'), 'mine');
    const key = parsed<RedriveResult>(
      await world.oncely(pipeline, ['dlq', 'redrive', '--key', 'mine-3', '--yes', '--json']),
    );
    expect(key).toMatchObject({ code: 0, result: { moved: 1, finished: true, left: 0, hidden: 0 } });
    expect((await drain(world.sqs, pipeline.queueUrl)).map((m) => m.key)).toEqual([...mine, 'mine-3']);

    // A key not among the messages reached may be among the 2 behind g0's first 10: not finished,
    // and the account names the group to redrive to reach them.
    const absent = parsed<RedriveResult>(
      await world.oncely(pipeline, ['dlq', 'redrive', '--key', 'k0-11', '--yes', '--json']),
    );
    expect(absent).toMatchObject({
      code: 3,
      result: { moved: 0, finished: false, left: 2, notSelected: 10, waitingBehind: ['g0'] },
    });
    const text = await world.oncely(pipeline, ['dlq', 'redrive', '--key', 'k0-11', '--yes']);
    expect(text.code).toBe(3);
    expect(text.text).toContain(
      '2 messages in the DLQ not reached: they wait behind the first messages of group g0, which this ' +
        'redrive does not move (`oncely dlq redrive --group g0` moves them).',
    );
    expect(await messagesInQueue(world.sqs, pipeline.dlqUrl)).toBe(12);
  });

  it('asks before moving more than 10; without a terminal and without --yes it refuses with exit code 4', async () => {
    const pipeline = await world.pipeline();
    await fill(pipeline, 11);
    const refused = await world.oncely(pipeline, ['dlq', 'redrive']);
    expect(refused.code).toBe(4);
    expect(refused.text).toMatch(
      /^Not moving up to 11 of the 11 messages in \S+ without confirmation, and there is no terminal to ask on: add --yes/,
    );
    const questions: string[] = [];
    const no = await world.oncely(pipeline, ['dlq', 'redrive'], async (question) => {
      questions.push(question);
      return false;
    });
    expect(no).toEqual({ code: 4, text: 'Nothing moved: not confirmed.' });
    expect(questions).toEqual([
      expect.stringMatching(/^Move up to 11 of the 11 messages in \S+ back to \S+\? \[y\/N\] $/),
    ]);
    expect(await messagesInQueue(world.sqs, pipeline.queueUrl)).toBe(0);
    // A limit of 10 needs no confirmation; one message is then left, not selected (exit 0), which --yes moves.
    expect((await world.oncely(pipeline, ['dlq', 'redrive', '--limit', '10'])).code).toBe(0);
    expect((await world.oncely(pipeline, ['dlq', 'redrive', '--yes'])).code).toBe(0);
    expect(await messagesInQueue(world.sqs, pipeline.queueUrl)).toBe(11);
  });
});

describe('the dlq command line', () => {
  const target = ['--ready-file', 'ready.json'];
  it('parses the options, each with its default, and refuses what it cannot take', () => {
    expect(parseCommandLine(['dlq', 'redrive', ...target], {})).toMatchObject({
      name: 'dlq-redrive',
      dryRun: false,
      yes: false,
      groupId: undefined,
      key: undefined,
      limit: undefined,
      timeoutSeconds: undefined,
    });
    expect(
      parseCommandLine(
        [
          'dlq',
          'redrive',
          '--dry-run',
          '--group',
          'g',
          '--key',
          'k',
          '--limit',
          '5',
          '--yes',
          '--timeout',
          '9',
          ...target,
        ],
        {},
      ),
    ).toMatchObject({ dryRun: true, groupId: 'g', key: 'k', limit: 5, yes: true, timeoutSeconds: 9 });
    expect(parseCommandLine(['dlq', 'list', '--limit', '7', '--timeout', '3', ...target], {})).toMatchObject({
      name: 'dlq-list',
      limit: 7,
      timeoutSeconds: 3,
    });
    expect(parseCommandLine(['dlq', 'discard', 'm1', 'm2', '--reason', 'why', ...target], {})).toMatchObject({
      name: 'dlq-discard',
      messageIds: ['m1', 'm2'],
      reason: 'why',
    });
    expect(() => parseCommandLine(['dlq', 'discard', 'm1', ...target], {})).toThrow(
      new CliUsageError('dlq discard needs --reason TEXT: it is kept with each message.'),
    );
    expect(() => parseCommandLine(['dlq', 'discard', '--reason', 'r', ...target], {})).toThrow(CliUsageError);
    expect(() => parseCommandLine(['dlq', 'list', '--limit', '0', ...target], {})).toThrow(
      '--limit takes a whole number above 0, got "0".',
    );
  });
});
