import { ResultTooLargeError } from './errors.js';
import { MAX_RESULT_BYTES } from './record.js';

/** A result as stored: JSON text, or only its size when it is too large to store. */
export type SerializedResult =
  | { result?: string; resultBytes?: undefined }
  | { result?: undefined; resultBytes: number };

export function serializeResult(result: unknown): SerializedResult {
  const json = result === undefined ? undefined : JSON.stringify(result);
  if (json === undefined) return {};
  const bytes = Buffer.byteLength(json);
  return bytes > MAX_RESULT_BYTES ? { resultBytes: bytes } : { result: json };
}

/** The error for a result too large to store (or to replay, for a record that only kept its size). */
export function tooLargeError(id: string, stored: { resultBytes?: number }): ResultTooLargeError | undefined {
  return stored.resultBytes === undefined
    ? undefined
    : new ResultTooLargeError(id, stored.resultBytes, MAX_RESULT_BYTES);
}

/** Duplicates get the stored result back through JSON, as a first call's caller would over the wire. */
export function parseResult<T>(json: string | undefined): T {
  return (json === undefined ? undefined : JSON.parse(json)) as T;
}
