import { randomUUID } from 'node:crypto';
import type { UpstreamAnswer } from './http-forward.js';

interface BatchRequest {
  Entries?: { Id?: string }[];
}

/**
 * A DeleteMessageBatch or ChangeMessageVisibilityBatch body with the entry at `index` carrying a
 * receipt handle SQS no longer honours (another receive's, since): the request as it comes, else.
 */
export function withStaleHandle(body: Buffer, index: number): Buffer {
  const request = JSON.parse(body.toString('utf8')) as { Entries?: { ReceiptHandle?: string }[] };
  const entry = request.Entries?.[index];
  if (!entry) return body;
  entry.ReceiptHandle = `stale-${randomUUID()}`;
  return Buffer.from(JSON.stringify(request));
}

/**
 * Answers a SendMessageBatch with the entry at `index` failed on SQS's side: the request goes on
 * without that entry (so it is never enqueued), and the answer lists it in `Failed` as
 * `InternalError`, not the sender's fault, next to whatever SQS made of the other entries. SQS
 * documents that each entry succeeds or fails on its own (check `Failed` even after a 200), and no
 * rule that a failed entry fails the later entries of its group: so they are accepted here.
 */
export async function failOneEntry(
  body: Buffer,
  index: number,
  forward: (body: Buffer) => Promise<UpstreamAnswer>,
): Promise<UpstreamAnswer> {
  const request = JSON.parse(body.toString('utf8')) as BatchRequest;
  const entries = request.Entries ?? [];
  const failed = entries[index];
  if (!failed) return forward(body); // no such entry: the request goes on as it came
  const rest = entries.filter((_, i) => i !== index);
  const answer =
    rest.length > 0 ? await forward(Buffer.from(JSON.stringify({ ...request, Entries: rest }))) : noEntries();
  if (answer.status !== 200) return answer;
  const output = JSON.parse(answer.body.toString('utf8')) as { Failed?: unknown[] };
  const failure = {
    Id: failed.Id,
    Code: 'InternalError',
    SenderFault: false,
    Message: 'entry failed by the fault proxy',
  };
  return {
    ...answer,
    body: Buffer.from(JSON.stringify({ ...output, Failed: [...(output.Failed ?? []), failure] })),
  };
}

/** What SQS would answer had it been asked to send nothing: an empty batch is refused, so it is not asked. */
function noEntries(): UpstreamAnswer {
  return {
    status: 200,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': randomUUID() },
    body: Buffer.from(JSON.stringify({ Successful: [], Failed: [] })),
  };
}
