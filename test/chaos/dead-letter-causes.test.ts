import { describe, expect, it } from 'vitest';
import { deadLetterCauses, unexpectedDeadLetters } from '../../chaos/dead-letter-causes.js';

const intended = new Map([
  ['shipped-o-1-0', 'UnknownMessageTypeError'],
  ['placed-o-2-huge', 'BusinessRuleViolationError'],
]);

describe('the pipeline run’s DLQ by cause', () => {
  it('expects the intended poison, each for its own reason', () => {
    const causes = deadLetterCauses(
      [
        { key: 'shipped-o-1-0', reason: 'UnknownMessageTypeError' },
        { key: 'placed-o-2-huge', reason: 'BusinessRuleViolationError' },
      ],
      intended,
    );
    expect(causes).toEqual({ intended: 2, businessRule: [], other: [] });
    expect(unexpectedDeadLetters(causes)).toBe(0);
  });

  it('counts a business rule broken by any other message, and any other reason, as unexpected', () => {
    const causes = deadLetterCauses(
      [
        { key: 'placed-o-3-0', reason: 'BusinessRuleViolationError' },
        { key: 'paid-o-3-2', reason: '(moved by SQS after maxReceiveCount)' },
        { key: 'placed-o-2-huge', reason: 'InvalidPayloadError' },
      ],
      intended,
    );
    expect(causes).toEqual({
      intended: 0,
      businessRule: ['placed-o-3-0'],
      other: ['paid-o-3-2: (moved by SQS after maxReceiveCount)', 'placed-o-2-huge: InvalidPayloadError'],
    });
    expect(unexpectedDeadLetters(causes)).toBe(3);
  });
});
