import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redriveDeadLetters } from '../../cli/dead-letter-redrive.js';
import { mulberry32 } from '../../harness/hash.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import {
  anyGroupPerReceive,
  type DlqWorld,
  deadLetter,
  drain,
  envelopeBody,
  PAST,
  startDlqWorld,
} from './dlq-fifo.js';

// Item 4 of issue 31: a redrive ends only when the DLQ holds nothing it should move, or says exactly
// what is left. On a FIFO whose receive returns one group, in any order (dlq-fifo.ts).

let world: DlqWorld;
beforeAll(async () => {
  world = await startDlqWorld();
});
afterAll(() => world?.stop());

const groups = (count: number) =>
  Array.from({ length: count }, (_, index) => `g${String(index).padStart(2, '0')}`);

describe('dlq redrive, a receive bringing one group in any order', () => {
  it('moves every group past its own skipped copies: one past-horizon message and 20 groups, 3 seeds', async () => {
    for (const seed of [1, 2, 3]) {
      const pipeline = await world.pipeline();
      await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody('old', 'old', PAST), 'old');
      for (const group of groups(20))
        await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody(`k-${group}`, group), group);
      const client = world.client();
      anyGroupPerReceive(client, world.client(), pipeline.dlqUrl, mulberry32(seed));

      const result = await redriveDeadLetters(client, pipeline, { timeoutMs: 20_000 });

      const moved = (await drain(world.sqs, pipeline.queueUrl)).map((message) => message.key).sort();
      expect({ seed, moved }).toEqual({ seed, moved: groups(20).map((group) => `k-${group}`) });
      expect((await drain(world.sqs, pipeline.dlqUrl)).map((message) => message.key)).toEqual(['old']);
      expect(result).toMatchObject({ finished: true, moved: 20, left: 0, hidden: 0, timedOut: false });
    }
  });

  it("keeps receiving while SQS's counts lag behind its deletes, and finishes once they catch up", async () => {
    const pipeline = await world.pipeline();
    for (const group of groups(2)) {
      await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody(`k-${group}`, group), group);
    }
    const client = world.client();
    let lagging = 4;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const answer = await next(args);
        if (context.commandName !== 'GetQueueAttributesCommand' || lagging-- <= 0) return answer;
        // The deleted messages still counted, as SQS's approximate counts may for up to a minute.
        const output = answer.output as { Attributes: Record<string, string> };
        output.Attributes.ApproximateNumberOfMessages = '2';
        return answer;
      },
      { step: 'initialize', name: 'laggingCounts' },
    );
    const result = await redriveDeadLetters(client, pipeline, { timeoutMs: 20_000 });
    expect(lagging).toBeLessThan(0);
    expect(result).toMatchObject({ finished: true, moved: 2, left: 0, hidden: 0, timedOut: false });
  });

  it('does not call a group hidden by a concurrent `dlq list` done: it says it is hidden, and exits unfinished', async () => {
    const pipeline = await world.pipeline();
    for (const group of groups(3))
      await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody(`k-${group}`, group), group);
    // Another operator's listing holds the oldest group for the whole redrive.
    const lister = world.client();
    const { Messages = [] } = await lister.send(
      new ReceiveMessageCommand({
        QueueUrl: pipeline.dlqUrl,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 60,
      }),
    );
    expect(Messages).toHaveLength(1);

    const result = await redriveDeadLetters(world.sqs, pipeline, { timeoutMs: 2_000 });

    expect(result).toMatchObject({ finished: false, moved: 2, left: 0, hidden: 1 });
    expect((await drain(world.sqs, pipeline.queueUrl)).map((message) => message.key)).toEqual([
      'k-g01',
      'k-g02',
    ]);
    expect(await messagesInQueue(world.sqs, pipeline.dlqUrl)).toBe(1);
  });

  // Issue 42, item 5: a message the redrive held, deleted meanwhile by someone else (retention, a
  // discard), still counted as its own in flight, and hid another operator's movable message.
  it('does not count a held message deleted meanwhile as its own: another holder’s message stays hidden, not finished', async () => {
    const pipeline = await world.pipeline();
    await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody('theirs', 'theirs'), 'theirs');
    const { Messages: theirs = [] } = await world.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: pipeline.dlqUrl, VisibilityTimeout: 120 }),
    );
    expect(theirs).toHaveLength(1);
    await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody('old', 'old', PAST), 'old');
    const client = world.client();
    // Once the redrive has received the past-horizon message (which it holds, unmoved), it is deleted.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const output = await next(args);
        if (context.commandName !== 'ReceiveMessageCommand') return output;
        const { Messages = [] } = output.output as { Messages?: { ReceiptHandle?: string }[] };
        for (const { ReceiptHandle } of Messages) {
          await world.sqs.send(new DeleteMessageCommand({ QueueUrl: pipeline.dlqUrl, ReceiptHandle }));
        }
        return output;
      },
      { step: 'initialize', name: 'deleteWhatItReceives' },
    );

    const result = await redriveDeadLetters(client, pipeline, { timeoutMs: 3_000 });

    expect(result).toMatchObject({ finished: false, moved: 0, hidden: 1 });
    expect(await messagesInQueue(world.sqs, pipeline.dlqUrl)).toBe(1);
  });
});
