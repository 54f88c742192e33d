import {
  ChangeMessageVisibilityBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';

/** How the sweep of a DLQ ended. */
export type SweepEnd =
  /** SQS counts nothing visible and nothing in flight but what the sweep holds: it saw every message. */
  | 'seen-through'
  /** Messages are visible, none in flight elsewhere, yet receives bring none: they wait behind what the sweep holds. */
  | 'blocked'
  /** The caller had what it wanted (a limit). */
  | 'stopped'
  | 'timed-out';

export interface SweepResult {
  end: SweepEnd;
  /** Visible in the DLQ when the sweep ended and never handed to the caller: 0 when seen through. */
  left: number;
  /** In flight elsewhere when the sweep ended (another `dlq list`, another redrive): 0 when seen through. */
  hidden: number;
  /** Held messages that could not be made visible again: they reappear after the visibility timeout. */
  stillHidden: number;
  /**
   * The groups of the messages the sweep held when it ended. A `blocked` sweep's `left` messages are
   * all of these groups: on a FIFO queue only a group's own message in flight holds its later ones back.
   */
  heldGroups: ReadonlySet<string>;
}

export interface SweepOptions {
  /** Epoch ms: no receive starts after it. */
  deadline: number;
  /** How long a received message stays hidden: long enough to handle one batch. */
  visibilitySeconds: number;
  /**
   * Called with each receive's new messages, in the order SQS handed them out. Returns the ids of
   * those it deleted from the DLQ; the rest stay held (hidden) until the sweep ends.
   */
  handle(messages: Message[]): Promise<ReadonlySet<string>>;
  /** Asked before each receive: true ends the sweep (`stopped`). */
  done?(): boolean;
}

/** Empty receives in a row, with only the sweep's own messages in flight, before the DLQ counts as blocked. */
const BLOCKED_AFTER_EMPTY_RECEIVES = 2;
/** A receive waits this long for a message: a long poll, which asks every SQS server, not a sample. */
const RECEIVE_WAIT_SECONDS = 1;

/**
 * Receives a FIFO DLQ's messages until SQS's own counts say it handed out every one, or why not.
 * A receive that brings nothing new proves nothing: SQS may return one group per receive, in any
 * order, and nothing of a group with a message in flight (this sweep's, or another operator's). So
 * the sweep stops only when `ApproximateNumberOfMessages` is 0 and the messages in flight are its
 * own; while others are in flight it keeps receiving (a `dlq list` lets its messages go within
 * 60 s) until the deadline. The counts are approximate and may lag: a lag makes the sweep report
 * messages left, never miss one.
 *
 * What it holds is kept as ids and receipt handles only, not bodies, so holding many costs little.
 * When the caller deletes part of a group, the group's held messages are let go at once: a FIFO
 * group hands out nothing while one of its messages is in flight, and its later messages are
 * reachable only behind its head again. Before it calls the DLQ blocked, it lets every held message
 * go once, for what arrived behind one meanwhile; held ones received again stay held, unhandled.
 */
export async function sweepDeadLetters(
  sqs: SQSClient,
  dlqUrl: string,
  options: SweepOptions,
): Promise<SweepResult> {
  const held = new Map<string, Held>();
  let end: SweepEnd | undefined;
  let emptyReceives = 0;
  /** Whether the held messages were all let go since the last new message: once is enough to see behind them. */
  let retried = false;
  let counts = { visible: 0, inFlight: 0 };
  /** The batch being handled: on a failure, what of it was not deleted is let go too. */
  let handling: Message[] = [];
  try {
    while (end === undefined) {
      if (options.done?.()) end = 'stopped';
      else if (Date.now() >= options.deadline) end = 'timed-out';
      if (end !== undefined) break;
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: dlqUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: options.visibilitySeconds,
          WaitTimeSeconds: RECEIVE_WAIT_SECONDS,
          AttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
      );
      if (Messages.length === 0) {
        counts = await depth(sqs, dlqUrl);
        let elsewhere = counts.inFlight - held.size;
        // About to judge by what it holds: a held message deleted meanwhile (retention, another
        // operator) would count as its own and hide another holder's.
        if (
          elsewhere <= 0 &&
          held.size > 0 &&
          (await forgetGone(sqs, dlqUrl, held, options.visibilitySeconds)) > 0
        )
          elsewhere = counts.inFlight - held.size;
        if (counts.visible === 0 && elsewhere <= 0) end = 'seen-through';
        // Holding nothing, nothing of the sweep's can block them: SQS's counts lag (up to a minute),
        // or messages are arriving. It keeps receiving, until the deadline at most.
        else if (elsewhere <= 0 && held.size > 0 && ++emptyReceives >= BLOCKED_AFTER_EMPTY_RECEIVES) {
          if (retried) end = 'blocked';
          else {
            // Something arrived behind a held message (a moved one the consumer sent back, say): let
            // everything go once, so that each group comes again from its head with what is behind it.
            await makeVisible(
              sqs,
              dlqUrl,
              [...held.values()].map((entry) => entry.receiptHandle),
            );
            retried = true;
            emptyReceives = 0;
          }
        }
        continue;
      }
      emptyReceives = 0;
      const fresh: Message[] = [];
      for (const message of Messages) {
        const known = held.get(String(message.MessageId));
        // Held before, and back after its visibility timeout: hidden again under its new handle.
        if (known) known.receiptHandle = String(message.ReceiptHandle);
        else fresh.push(message);
      }
      if (fresh.length === 0) continue;
      retried = false;
      handling = fresh;
      const deleted = await options.handle(fresh);
      handling = [];
      for (const message of fresh) {
        if (!deleted.has(String(message.MessageId))) held.set(String(message.MessageId), heldOf(message));
      }
      const progressed = new Set(fresh.filter((m) => deleted.has(String(m.MessageId))).map(groupOf));
      const letGo = [...held.entries()].filter(([, entry]) => progressed.has(entry.groupId));
      if (letGo.length > 0) {
        await makeVisible(
          sqs,
          dlqUrl,
          letGo.map(([, entry]) => entry.receiptHandle),
        );
        for (const [id] of letGo) held.delete(id);
      }
    }
    if (end !== 'seen-through') counts = await depth(sqs, dlqUrl);
  } catch (error) {
    // A deleted message's handle is refused, which is harmless.
    for (const message of handling) held.set(String(message.MessageId), heldOf(message));
    await release(sqs, dlqUrl, held);
    throw error;
  }
  const heldGroups = new Set([...held.values()].map((entry) => entry.groupId));
  const stillHidden = await release(sqs, dlqUrl, held);
  if (end === 'seen-through') return { end, left: 0, hidden: 0, stillHidden, heldGroups };
  return {
    end,
    left: counts.visible,
    hidden: Math.max(0, counts.inFlight - held.size),
    stillHidden,
    heldGroups,
  };
}

interface Held {
  groupId: string;
  receiptHandle: string;
}

function heldOf(message: Message): Held {
  return { groupId: groupOf(message), receiptHandle: String(message.ReceiptHandle) };
}

/** A group for people: a plain standard queue's messages have none (`''`). */
export function describeGroup(groupId: string): string {
  return groupId === '' ? 'no group' : `group ${groupId}`;
}

export function groupOf(message: Message): string {
  // A plain standard queue's message has none (DESIGN §5.1): `''`, as the consumer says it.
  return message.Attributes?.MessageGroupId ?? '';
}

async function depth(sqs: SQSClient, queueUrl: string): Promise<{ visible: number; inFlight: number }> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: Number(Attributes.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
  };
}

/**
 * Renews the hold on every held message, and forgets those SQS refuses: no longer in flight under
 * this sweep's receipt handle (deleted, or received again by another). Returns how many it forgot.
 */
async function forgetGone(
  sqs: SQSClient,
  dlqUrl: string,
  held: Map<string, Held>,
  visibilitySeconds: number,
): Promise<number> {
  const entries = [...held.entries()];
  const refused = await changeVisibility(
    sqs,
    dlqUrl,
    entries.map(([, entry]) => entry.receiptHandle),
    visibilitySeconds,
  );
  for (const index of refused) held.delete((entries[index] as [string, Held])[0]);
  return refused.size;
}

/** Lets every held message go; returns how many could not be (they reappear after the visibility timeout). */
async function release(sqs: SQSClient, dlqUrl: string, held: Map<string, Held>): Promise<number> {
  const handles = [...held.values()].map((entry) => entry.receiptHandle);
  return makeVisible(sqs, dlqUrl, handles).catch(() => handles.length);
}

/** Makes received messages visible again; returns how many could not be. */
export async function makeVisible(
  sqs: SQSClient,
  queueUrl: string,
  receiptHandles: string[],
): Promise<number> {
  return (await changeVisibility(sqs, queueUrl, receiptHandles, 0)).size;
}

/**
 * Sets the visibility timeout of received messages, 10 a call: the indexes of those SQS refused
 * (no longer in flight under that receipt handle).
 */
export async function changeVisibility(
  sqs: SQSClient,
  queueUrl: string,
  receiptHandles: string[],
  visibilitySeconds: number,
): Promise<Set<number>> {
  const refused = new Set<number>();
  for (let i = 0; i < receiptHandles.length; i += 10) {
    const { Failed = [] } = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: receiptHandles.slice(i, i + 10).map((ReceiptHandle, index) => ({
          Id: String(index),
          ReceiptHandle,
          VisibilityTimeout: visibilitySeconds,
        })),
      }),
    );
    for (const { Id } of Failed) refused.add(i + Number(Id));
  }
  return refused;
}
