import { randomUUID } from 'node:crypto';
import type { ChaosService } from './faults.js';

/** A complete HTTP answer the proxy sends instead of the upstream's. */
export interface ErrorAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** `internal`: a 5xx the SDK retries as transient. `throttling`: the service's throttling error. */
export type InjectedError = 'internal' | 'throttling';

interface ErrorShape {
  status: number;
  type: string;
  /** SQS speaks JSON but stays compatible with its query-protocol codes, sent in this header. */
  queryError?: string;
}

/**
 * The services' own error shapes (AWS JSON 1.0: `__type` names the error, the SDK keeps what
 * follows `#`). Retried by the SDK's standard strategy: the 500s as transient (by status), the
 * throttling errors as throttling (by name, with the longer throttling backoff).
 */
const SHAPES: Record<ChaosService, Record<InjectedError, ErrorShape>> = {
  dynamodb: {
    internal: { status: 500, type: 'com.amazonaws.dynamodb.v20120810#InternalServerError' },
    throttling: {
      status: 400,
      type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
    },
  },
  sqs: {
    internal: { status: 500, type: 'com.amazonaws.sqs#InternalError', queryError: 'InternalError;Receiver' },
    throttling: {
      status: 400,
      type: 'com.amazonaws.sqs#RequestThrottled',
      queryError: 'RequestThrottled;Sender',
    },
  },
};

export function errorAnswer(service: ChaosService, error: InjectedError): ErrorAnswer {
  const shape = SHAPES[service][error];
  return {
    status: shape.status,
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amzn-requestid': randomUUID(),
      ...(shape.queryError ? { 'x-amzn-query-error': shape.queryError } : {}),
    },
    body: JSON.stringify({ __type: shape.type, message: `${error} error injected by the fault proxy` }),
  };
}
