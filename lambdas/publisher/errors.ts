import { isObject } from '../common/envelope.js';
import { OncelyError } from '../idempotency/errors.js';

/**
 * The publisher's function errors, and how they cross the Lambda boundary.
 *
 * Lambda turns a thrown error into `{ errorType: error.name, errorMessage: error.message, trace }`
 * and drops every other property. So each error here fixes its name in a static `errorName` (as
 * every Oncely error does) and writes its details into its message: a readable
 * summary on the first line, the details as JSON on the second. The client parses them back
 * into the same classes with `publisherErrorFromFunctionError`.
 */
function crossingMessage(summary: string, details: object): string {
  return `${summary.replaceAll('\n', ' ')}\n${JSON.stringify(details)}`;
}

/** One reason a request is invalid. */
export interface ValidationProblem {
  /** The message's position in the request; absent for a problem of the request itself. */
  index?: number;
  /** Where, e.g. `messages[3].groupId`. */
  path: string;
  /** What is wrong, in words. */
  message: string;
}

/** How many problems the summary line lists; the details always carry all of them. */
const PROBLEMS_IN_SUMMARY = 10;

/** The request is invalid: nothing was sent. Fix the listed messages and publish again. */
export class PublishValidationError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'PublishValidationError';
  /** `false`: the same messages fail the same checks. */
  readonly retryable = false;

  constructor(
    /** Every problem found, each with the message's index and path. */
    readonly problems: readonly ValidationProblem[],
  ) {
    const listed = problems
      .slice(0, PROBLEMS_IN_SUMMARY)
      .map((problem) => `${problem.path}: ${problem.message}`);
    const more = problems.length - listed.length;
    super(
      crossingMessage(
        `The publish request is invalid, nothing was sent: ${listed.join('; ')}${more > 0 ? `; and ${more} more` : ''}`,
        { problems },
      ),
    );
  }
}

/** The requestId was used before for a different request. Nothing was sent. */
export class PublishConflictError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'PublishConflictError';
  /** `false`: the requestId stays bound to the other request. */
  readonly retryable = false;

  constructor(
    /** The requestId already used for a different request. */
    readonly requestId: string,
  ) {
    super(
      crossingMessage(
        `requestId "${requestId}" was already used for a different request, so nothing was sent. A requestId ` +
          'names one request: retry with exactly the same messages, or give a new request a new requestId.',
        { requestId },
      ),
    );
  }
}

/** Another invocation is publishing this requestId right now. Retry: the repeat gets its response. */
export class PublishInProgressError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'PublishInProgressError';
  /** `true`: once the other invocation finishes, a repeat returns its response. */
  readonly retryable = true;

  constructor(
    /** The requestId another invocation is publishing. */
    readonly requestId: string,
    /** Epoch milliseconds after which the other invocation's claim on the request expires. */
    readonly leaseExpiresAt: number,
  ) {
    super(
      crossingMessage(
        `requestId "${requestId}" is being published by another invocation (claimed until ` +
          `${new Date(leaseExpiresAt).toISOString()}); this one sent nothing. Retry with the same requestId: ` +
          'once the other finishes, a repeat returns its response.',
        { requestId, leaseExpiresAt },
      ),
    );
  }
}

export type PublisherError = PublishValidationError | PublishConflictError | PublishInProgressError;

/** Each error's details as its message carries them, checked field by field; `undefined` if they are not. */
const decoders: Record<string, (details: Record<string, unknown>) => PublisherError | undefined> = {
  PublishValidationError: ({ problems }) => {
    if (!Array.isArray(problems)) return undefined;
    const decoded = problems.map(validationProblemOf);
    return decoded.every((problem) => problem !== undefined)
      ? new PublishValidationError(decoded as ValidationProblem[])
      : undefined;
  },
  PublishConflictError: ({ requestId }) =>
    typeof requestId === 'string' ? new PublishConflictError(requestId) : undefined,
  PublishInProgressError: ({ requestId, leaseExpiresAt }) =>
    typeof requestId === 'string' && isFiniteNumber(leaseExpiresAt)
      ? new PublishInProgressError(requestId, leaseExpiresAt)
      : undefined,
};

function validationProblemOf(value: unknown): ValidationProblem | undefined {
  if (!isObject(value)) return undefined;
  const { index, path, message } = value;
  const indexValid = index === undefined || Number.isSafeInteger(index);
  if (!indexValid || typeof path !== 'string' || typeof message !== 'string') return undefined;
  return { ...('index' in value ? { index: index as number | undefined } : {}), path, message };
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/**
 * Rebuilds a publisher error, details included, from what Lambda reports for it. `undefined` when
 * the function error is not one of them (a timeout, a crash) or its details do not parse.
 */
export function publisherErrorFromFunctionError(
  errorType: string,
  errorMessage: string,
): PublisherError | undefined {
  const decoder = Object.hasOwn(decoders, errorType) ? decoders[errorType] : undefined;
  const newline = errorMessage.indexOf('\n');
  if (!decoder || newline < 0) return undefined;
  let details: unknown;
  try {
    details = JSON.parse(errorMessage.slice(newline + 1));
  } catch {
    return undefined;
  }
  return isObject(details) ? decoder(details) : undefined;
}
