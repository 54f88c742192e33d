import { recordLifeCoveringSec } from '../common/dedup-horizon.js';
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
 * conditional write per copy, at once, on the failure path only. A write that fails is logged and
 * counted; the copy's next delivery tries again.
 */
export async function keepRecordsOfReturningCopies(
  copies: readonly ReturningCopy[],
  options: RecordProcessorOptions,
): Promise<void> {
  await Promise.all(
    copies.map(async ({ received, telemetry }) => {
      const kept = recordToKeep(received, options);
      if (!kept) return;
      try {
        await options.store.keepUntil(kept.id, kept.untilSec);
      } catch (error) {
        telemetry.count('recordLifeNotExtended');
        telemetry.logger.error(
          "could not make the key's record outlive this copy's dedup horizon; its next delivery tries again",
          { error, expiresAtNeeded: kept.untilSec },
        );
      }
    }),
  );
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
