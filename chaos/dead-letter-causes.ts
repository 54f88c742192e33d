import type { DeadLetter } from '../harness/pipeline-state.js';
import { BusinessRuleViolationError } from '../lambdas/consumer/errors.js';

/**
 * The DLQ of a pipeline run split by cause. Only the workload's poison messages are meant to be
 * there, each for the reason it was written to break; any other copy is unexpected and fails the
 * run: a business rule broken where the workload did not mean to (a payment ahead of its order, an
 * order ahead of the stock load), or any other reason (retries exhausted, say).
 */
export interface DeadLetterCauses {
  /** Copies of intended poison messages, with the reason each was meant to get. */
  intended: number;
  /** `key` of each other copy refused by a business rule. */
  businessRule: string[];
  /** `key: reason` of each copy for any other reason, or of a poison message for another reason. */
  other: string[];
}

/** Splits the DLQ's copies by cause, given each intended poison message's key and reason. */
export function deadLetterCauses(
  entries: readonly DeadLetter[],
  intended: ReadonlyMap<string, string>,
): DeadLetterCauses {
  const causes: DeadLetterCauses = { intended: 0, businessRule: [], other: [] };
  for (const { key, reason } of entries) {
    if (intended.get(key) === reason) causes.intended++;
    else if (!intended.has(key) && reason === BusinessRuleViolationError.errorName)
      causes.businessRule.push(key);
    else causes.other.push(`${key}: ${reason}`);
  }
  return causes;
}

/** The copies no cause of the workload's explains: each one fails the run. */
export function unexpectedDeadLetters(causes: DeadLetterCauses): number {
  return causes.businessRule.length + causes.other.length;
}
