import type {
  BatchResultErrorEntry,
  SendMessageBatchCommandInput,
  SendMessageBatchCommandOutput,
  SendMessageBatchRequestEntry,
  SQSClient,
} from '@aws-sdk/client-sqs';

/** How SendMessageBatch should fail one entry. */
export interface EntryFault {
  /**
   * `before-sending`: the entry never reaches the queue. `after-sending`: it is enqueued, but the
   * answer reports it failed — as when SQS fails after committing, or the answer is lost.
   */
  when: 'before-sending' | 'after-sending';
  code: string;
  senderFault: boolean;
}

export const TRANSIENT: Omit<EntryFault, 'when'> = { code: 'InternalError', senderFault: false };
export const PERMANENT: Omit<EntryFault, 'when'> = { code: 'InvalidMessageContents', senderFault: true };

export interface EntryFaultOptions {
  /**
   * Whether the later entries of a failed entry's group, in the same call, fail the same way — a
   * batch that keeps each group in order. True by default; false makes SQS accept them anyway.
   */
  laterEntriesOfGroupFail?: boolean;
}

/**
 * Makes SendMessageBatch fail chosen entries. `plan` sees each entry with how many times its
 * deduplication id (on a standard queue, which takes none: its body's key) has been sent so far
 * (1 on the first). Returns a log of every entry sent, in order.
 */
export function injectEntryFaults(
  sqs: SQSClient,
  plan: (entry: { key: string; groupId: string; attempt: number }) => EntryFault | undefined,
  options: EntryFaultOptions = {},
) {
  const sentKeys: string[] = [];
  const attempts = new Map<string, number>();
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'SendMessageBatchCommand') return next(args);
      const input = args.input as SendMessageBatchCommandInput;
      const entries = input.Entries ?? [];
      const faults = new Map<string, EntryFault>();
      const faultedGroups = new Map<string, EntryFault>();
      for (const entry of entries) {
        const key = entry.MessageDeduplicationId ?? keyOfBody(entry.MessageBody);
        const group = entry.MessageGroupId ?? '';
        const attempt = (attempts.get(key) ?? 0) + 1;
        attempts.set(key, attempt);
        sentKeys.push(key);
        const inherited = options.laterEntriesOfGroupFail === false ? undefined : faultedGroups.get(group);
        const fault = plan({ key, groupId: group, attempt }) ?? inherited;
        if (!fault) continue;
        faults.set(entry.Id ?? '', fault);
        if (!faultedGroups.has(group)) faultedGroups.set(group, fault);
      }

      const reaching = entries.filter((entry) => faults.get(entry.Id ?? '')?.when !== 'before-sending');
      const result =
        reaching.length > 0
          ? await next({ ...args, input: { ...input, Entries: reaching } })
          : { output: { $metadata: {} }, response: {} };
      const output = result.output as SendMessageBatchCommandOutput;
      return {
        ...result,
        output: {
          ...output,
          Successful: (output.Successful ?? []).filter((entry) => !faults.has(entry.Id ?? '')),
          Failed: [...(output.Failed ?? []), ...entries.filter(faulted(faults)).map(failure(faults))],
        },
      };
    },
    { step: 'initialize', name: `entryFaults-${Math.random()}` },
  );
  return {
    /** Every deduplication id sent, in order; a retried entry appears again. */
    sentKeys,
    attemptsOf: (key: string) => attempts.get(key) ?? 0,
  };
}

/** An envelope's key, for an entry without a deduplication id. */
function keyOfBody(body: string | undefined): string {
  try {
    return String(JSON.parse(body ?? '').key ?? '');
  } catch {
    return '';
  }
}

const faulted = (faults: Map<string, EntryFault>) => (entry: SendMessageBatchRequestEntry) =>
  faults.has(entry.Id ?? '');

const failure =
  (faults: Map<string, EntryFault>) =>
  (entry: SendMessageBatchRequestEntry): BatchResultErrorEntry => {
    const fault = faults.get(entry.Id ?? '') as EntryFault;
    return { Id: entry.Id, Code: fault.code, SenderFault: fault.senderFault, Message: 'injected failure' };
  };

/**
 * Makes whole SendMessageBatch calls fail: `plan` sees the call's number (1 on the first) and
 * returns the error to throw, before the request leaves or after its answer arrived.
 */
export function injectCallFaults(
  sqs: SQSClient,
  plan: (call: number) => { when: 'before-sending' | 'after-sending'; error: Error } | undefined,
) {
  let calls = 0;
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'SendMessageBatchCommand') return next(args);
      const fault = plan(++calls);
      if (fault?.when === 'before-sending') throw fault.error;
      const result = await next(args);
      if (fault?.when === 'after-sending') throw fault.error;
      return result;
    },
    { step: 'initialize', name: `callFaults-${Math.random()}` },
  );
}

/**
 * Holds every request of `sqs` until `release()`: makes a publish stay in flight on purpose, so
 * that a repeat can meet it. `held()` tells whether a request is waiting.
 */
export function holdSends(sqs: SQSClient) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  sqs.middlewareStack.add(
    (next) => async (args) => {
      held = true;
      await gate;
      return next(args);
    },
    { step: 'initialize', name: 'holdSends' },
  );
  return { held: () => held, release };
}
