import { describe, expect, it } from 'vitest';
import {
  PublishConflictError,
  PublishInProgressError,
  PublishValidationError,
  publisherErrorFromFunctionError,
} from '../../lambdas/publisher/errors.js';

/** What Lambda's Node.js runtime reports for a thrown error: its name and message, nothing else. */
const overTheWire = (error: Error) =>
  JSON.parse(JSON.stringify({ errorType: error.name, errorMessage: error.message }));

const problems = [
  { index: 0, path: 'messages[0].groupId', message: 'groupId is required' },
  { path: 'requestId', message: 'requestId must be 1–128 printable ASCII characters without spaces' },
];

describe('publisher errors across the Lambda boundary', () => {
  it.each([
    new PublishValidationError(problems),
    new PublishConflictError('checkout-42'),
    new PublishInProgressError('checkout-42', Date.UTC(2026, 10, 21, 10)),
  ])('rebuilds $name with its details from errorType and errorMessage', (error) => {
    const { errorType, errorMessage } = overTheWire(error);
    const rebuilt = publisherErrorFromFunctionError(errorType, errorMessage);
    expect(rebuilt).toBeInstanceOf(error.constructor);
    expect(rebuilt).toEqual(error);
    expect(rebuilt?.message).toBe(error.message);
    expect(rebuilt?.retryable).toBe(error.retryable);
  });

  it('keeps stable names whatever a bundler does to class names', () => {
    expect(new PublishValidationError([]).name).toBe('PublishValidationError');
    expect(new PublishConflictError('r').name).toBe('PublishConflictError');
    expect(new PublishInProgressError('r', 0).name).toBe('PublishInProgressError');
  });

  it('puts a readable summary on the first line and the details as JSON on the second', () => {
    const [summary, details, ...rest] = new PublishValidationError(problems).message.split('\n');
    expect(summary).toBe(
      'The publish request is invalid, nothing was sent: messages[0].groupId: groupId is required; ' +
        'requestId: requestId must be 1–128 printable ASCII characters without spaces',
    );
    expect(JSON.parse(details ?? '')).toEqual({ problems });
    expect(rest).toEqual([]);
  });

  it('lists at most ten problems in the summary, and all of them in the details', () => {
    const many = Array.from({ length: 25 }, (_, index) => ({
      index,
      path: `messages[${index}]`,
      message: 'bad',
    }));
    const error = new PublishValidationError(many);
    expect(error.message.split('\n')[0]).toMatch(/messages\[9\]: bad; and 15 more$/);
    expect(error.problems).toHaveLength(25);
    expect(publisherErrorFromFunctionError(error.name, error.message)).toMatchObject({ problems: many });
  });

  it('leaves other function errors, and garbled details, to the caller', () => {
    expect(
      publisherErrorFromFunctionError('Sandbox.Timedout', 'Task timed out after 3.00 seconds'),
    ).toBeUndefined();
    expect(publisherErrorFromFunctionError('PublishConflictError', 'no details')).toBeUndefined();
    expect(publisherErrorFromFunctionError('PublishConflictError', 'summary\n{not json')).toBeUndefined();
    expect(
      publisherErrorFromFunctionError('PublishConflictError', 'summary\n{"requestId":7}'),
    ).toBeUndefined();
    expect(publisherErrorFromFunctionError('toString', 'summary\n{}')).toBeUndefined();
  });
});
