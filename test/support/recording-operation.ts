import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { type LeaseOperationOptions, leaseOperation } from '../../lambdas/consumer/index.js';

/** The payload of the consumer tests' `Named` messages (see `named` in ./sqs.ts). */
export const namedPayload = z.object({ name: z.string() });

/** A lease-mode operation that records the names it ran, in order; `fail` may throw for a name's attempt. */
export function recordingOperation({
  fail,
  ...overrides
}: Partial<LeaseOperationOptions<{ name: string }, unknown>> & {
  fail?: (name: string, attempt: number) => void;
} = {}) {
  const ran: string[] = [];
  const operation = leaseOperation({
    namespace: `test-${randomUUID().slice(0, 8)}`,
    mode: 'at-least-once',
    payload: namedPayload,
    run: async (message, { attempt }) => {
      ran.push(message.payload.name);
      fail?.(message.payload.name, attempt);
      return { ran: message.payload.name };
    },
    ...overrides,
  });
  return { ran, operation };
}
