import { ResourceNotFoundException } from '@aws-sdk/client-lambda';
import { SQSServiceException } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { isThrottlingErrorCode, isTransientAwsError } from '../../lambdas/common/transient-aws-error.js';

function serviceError(name: string, httpStatusCode: number, $fault: 'client' | 'server' = 'client') {
  return new SQSServiceException({ name, $fault, $metadata: { httpStatusCode }, message: name });
}

const networkError = (code: string) => Object.assign(new Error(`connect ${code}`), { code });

describe('isTransientAwsError', () => {
  it.each([
    ['throttling by name', serviceError('ThrottlingException', 400)],
    ['throttling by status', serviceError('SomethingNew', 429)],
    ['a 5xx', serviceError('InternalError', 500, 'server')],
    ['a 503', serviceError('ServiceUnavailable', 503, 'server')],
    ['a connection reset', networkError('ECONNRESET')],
    ['a refused connection', networkError('ECONNREFUSED')],
    ['an SDK timeout', Object.assign(new Error('timed out'), { name: 'TimeoutError' })],
    ['an error marked retryable', Object.assign(new Error('x'), { $retryable: {} })],
    ['a wrapped network error', new Error('request failed', { cause: networkError('EPIPE') })],
  ])('retries %s', (_, error) => {
    expect(isTransientAwsError(error)).toBe(true);
  });

  it.each([
    ['a validation error', serviceError('InvalidParameterValue', 400)],
    ['a missing resource', new ResourceNotFoundException({ message: 'Function not found', $metadata: {} })],
    ['an access denial', serviceError('AccessDenied', 403)],
    ['an abort', Object.assign(new Error('aborted'), { name: 'AbortError' })],
    ['a bug', new TypeError('x is not a function')],
    ['a thrown string', 'boom'],
  ])('does not retry %s', (_, error) => {
    expect(isTransientAwsError(error)).toBe(false);
  });
});

describe('isThrottlingErrorCode', () => {
  it('knows the throttling codes of batch entries', () => {
    expect(isThrottlingErrorCode('RequestThrottled')).toBe(true);
    expect(isThrottlingErrorCode('KmsThrottled')).toBe(true);
    expect(isThrottlingErrorCode('InvalidMessageContents')).toBe(false);
    expect(isThrottlingErrorCode(undefined)).toBe(false);
  });
});
