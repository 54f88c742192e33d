/**
 * Whether an error thrown by an AWS SDK call is worth retrying with the same input: throttling,
 * a 5xx, a timeout or a dropped connection. Mirrors the SDK's own classification (@smithy/core
 * retry), which is not a public API; an AbortError is a caller's decision, never retried.
 */
export function isTransientAwsError(error: unknown): boolean {
  if (!(error instanceof Error) || error.name === 'AbortError') return false;
  const { $retryable, $metadata, code, cause } = error as SdkErrorFields;
  if ($retryable !== undefined || isThrottlingErrorCode(error.name) || TIMEOUT_ERROR_NAMES.has(error.name)) {
    return true;
  }
  const status = $metadata?.httpStatusCode;
  if (status !== undefined) return status === 429 || status >= 500;
  // No HTTP response at all: the connection failed, or the cause says why.
  return (code !== undefined && NETWORK_ERROR_CODES.has(code)) || isTransientAwsError(cause);
}

/** Whether an error name or code (e.g. a batch entry's `Code`) means the service was throttling. */
export function isThrottlingErrorCode(code: string | undefined): boolean {
  return code !== undefined && THROTTLING_ERROR_NAMES.has(code);
}

interface SdkErrorFields {
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
  code?: string;
  cause?: unknown;
}

const THROTTLING_ERROR_NAMES = new Set([
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'KmsThrottled',
  'LimitExceededException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
]);

const TIMEOUT_ERROR_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException']);

const NETWORK_ERROR_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
