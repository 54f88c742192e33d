import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  CreateLogStreamCommand,
  PutLogEventsCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveriesInLogLines, recentMessages } from '../../cli/console-activity.js';
import { type StackLogs, stackLogs } from '../../cli/stack-logs.js';
import { REGION } from './cdk-cli.js';
import { type Moto, startMoto } from './moto.js';

// What a stack's console reads of CloudWatch Logs (docs/console.md): the consumer's verdict lines
// for the message list, a key's lines for its story; through the AWS SDK against moto's Logs, the
// lines put there as Powertools' Logger writes them on Lambda.

let moto: Moto;
let logs: CloudWatchLogsClient;
let reader: StackLogs | undefined;
const config = {
  region: REGION,
  credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
};
const CONSUMER = '/aws/lambda/Shop-consumer';
const PUBLISHER = '/aws/lambda/Shop-publisher';

beforeAll(async () => {
  moto = await startMoto();
  logs = new CloudWatchLogsClient({ ...config, endpoint: moto.endpoint });
  for (const group of [CONSUMER, PUBLISHER]) {
    await logs.send(new CreateLogGroupCommand({ logGroupName: group }));
    await logs.send(new CreateLogStreamCommand({ logGroupName: group, logStreamName: 'container-1' }));
  }
}, 120_000);

afterAll(async () => {
  reader?.close();
  logs?.destroy();
  await moto?.stop();
});

/** Lines of a function's log, `secondsAgo` each, as its JSON entries. */
async function put(group: string, lines: [number, Record<string, unknown> | string][]) {
  await logs.send(
    new PutLogEventsCommand({
      logGroupName: group,
      logStreamName: 'container-1',
      logEvents: lines.map(([secondsAgo, entry]) => ({
        timestamp: Date.now() - secondsAgo * 1000,
        message: typeof entry === 'string' ? entry : JSON.stringify(entry),
      })),
    }),
  );
}

const fields = (key: string) => ({
  messageKey: key,
  messageType: 'OrderPlaced',
  groupId: 'c-1',
  messageId: `m-${key}`,
  recordId: `ledger#${key}`,
});

describe("a stack's console, from CloudWatch Logs", () => {
  it('lists the messages by their verdict lines, and tells one key’s lines, its error with its stack', async () => {
    const error = {
      name: 'BusinessRuleViolationError',
      message: 'no such sku',
      stack: 'Error: no such sku\n    at ledger.ts:10',
    };
    await put(CONSUMER, [
      [
        120,
        {
          level: 'WARN',
          message: 'the record failed and SQS redelivers it',
          ...fields('o-1'),
          outcome: 'given-back',
          error,
        },
      ],
      [60, { level: 'INFO', message: 'processed', ...fields('o-1'), outcome: 'applied' }],
      [
        50,
        {
          level: 'INFO',
          message: 'duplicate of a completed record: acknowledged without running',
          ...fields('o-1'),
          outcome: 'duplicate',
        },
      ],
      [
        40,
        {
          level: 'WARN',
          message: 'sent to the DLQ at once: no retry can fix this record',
          ...fields('o-2'),
          outcome: 'dead-lettered',
          error,
        },
      ],
      // No verdict: not a delivery of its own.
      [30, { level: 'INFO', message: 'waited for the key another invocation held', ...fields('o-2') }],
      [20, 'START RequestId: 1 Version: $LATEST'],
    ]);
    await put(PUBLISHER, [[130, { level: 'INFO', message: 'sent', messageKey: 'o-1' }]]);
    const notes: string[] = [];
    reader = await stackLogs(
      { name: 'stack Shop', outputs: { ConsumerLogGroupName: CONSUMER, PublisherLogGroupName: PUBLISHER } },
      '',
      { ...config, endpoint: moto.endpoint },
      (note) => notes.push(note),
    );
    expect(notes).toEqual([]);
    const list = recentMessages(deliveriesInLogLines(await (reader as StackLogs).verdicts()), [], {});
    expect(
      list.messages.map(({ key, state, deliveries, recordId }) => ({ key, state, deliveries, recordId })),
    ).toEqual([
      { key: 'o-2', state: 'dead-lettered', deliveries: 1, recordId: 'ledger#o-2' },
      { key: 'o-1', state: 'duplicate', deliveries: 3, recordId: 'ledger#o-1' },
    ]);

    const about = await (reader as StackLogs).linesAbout('o-1', Date.now() - 10 * 60_000);
    expect(about.map(({ entry }) => entry.message)).toEqual([
      'sent',
      'the record failed and SQS redelivers it',
      'processed',
      'duplicate of a completed record: acknowledged without running',
    ]);
    expect(about.map((line) => line.function)).toEqual([
      'Shop-publisher',
      'Shop-consumer',
      'Shop-consumer',
      'Shop-consumer',
    ]);
    expect(about[1]?.entry.error).toEqual(error);
  });

  it('says why it reads nothing from a stack deployed without the log groups’ outputs', async () => {
    const notes: string[] = [];
    const none = await stackLogs({ name: 'stack Old', outputs: {} }, 'Orders', config, (note) =>
      notes.push(note),
    );
    expect(none).toBeUndefined();
    expect(notes).toEqual([
      'No message list or log lines: stack Old has no output OrdersConsumerLogGroupName (deploy it with this version).',
    ]);
  });
});
