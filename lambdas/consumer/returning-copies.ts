import { recordLifeCoveringSec } from '../common/dedup-horizon.js';
import { type BatchEnd, runUntilDeadline } from './batch-end.js';
import type { ReceivedRecord } from './message.js';
import { type RecordProcessorOptions, routeRecord } from './record-processor.js';
import type { RecordTelemetry } from './telemetry.js';

/** A record the batch leaves unacknowledged: SQS gives it back, or moves it to the DLQ. */
export interface ReturningCopy {
  received: ReceivedRecord;
  telemetry: RecordTelemetry;
}

/**
 * DESIGN §2: a copy's horizon runs from its own `publishedAt`, and a re-publication is stamped
 * afresh, so its horizon can outlive the record of its key's first completion. Acknowledged, a copy
 * is gone; but one that goes back to SQS may be dead-lettered and redriven after that record
 * expired, and would then find nothing and run again. So before the batch answers, the record of
 * each unacknowledged copy's key, if one lives, is made to outlive that copy's horizon: one
 * conditional write per copy, on the failure path only, `end.concurrency` at once until the
 * invocation's deadline draws near (`runUntilDeadline`). A write that fails, or that the deadline
 * left unsent, is counted; the copy's next delivery tries again.
 */
export async function keepRecordsOfReturningCopies(
  copies: readonly ReturningCopy[],
  options: RecordProcessorOptions,
  end: BatchEnd,
): Promise<void> {
  const writes = copies.flatMap((copy) => {
    const kept = recordToKeep(copy.received, options);
    return kept ? [{ ...kept, telemetry: copy.telemetry }] : [];
  });
  const unsent = await runUntilDeadline(writes, end, async (kept) => {
    try {
      await options.store.keepUntil(kept.id, kept.untilSec);
    } catch (error) {
      kept.telemetry.count('recordLifeNotExtended');
      kept.telemetry.logger.error(
        "could not make the key's record outlive this copy's dedup horizon; its next delivery tries again",
        { error, expiresAtNeeded: kept.untilSec },
      );
    }
  });
  for (const { telemetry } of unsent) telemetry.count('recordLifeNotExtended');
  if (unsent.length > 0) {
    // One line, not one a copy: the deadline is near.
    end.logger.error(
      "the invocation's deadline came before these copies' records were made to outlive their horizon; their next delivery tries again",
      { idempotencyKeys: unsent.map((kept) => kept.id) },
    );
  }
}

/** The record a copy needs kept, and until when; undefined for one that will never run anyway. */
function recordToKeep(
  received: ReceivedRecord,
  options: RecordProcessorOptions,
): { id: string; untilSec: number } | undefined {
  try {
    const { operation, message } = routeRecord(received, options);
    const untilSec = recordLifeCoveringSec(message.publishedAt, options.horizon);
    return untilSec === undefined ? undefined : { id: operation.recordIdOf(message), untilSec };
  } catch {
    return undefined; // no operation, or past the horizon: it goes to the DLQ and never runs
  }
}
