import { type ConsumerOperation, leaseOperation } from 'oncely/consumer';
import { type IdempotencyMode, NonRetryableError, OncelyError } from 'oncely/idempotency';
import * as z from 'zod/mini';
import { type HttpAnswer, postJson } from './http-post.js';
import '../shared/zod-english.js';

export const NOTIFICATIONS_NAMESPACE = 'notifications';
export const REMINDERS_NAMESPACE = 'reminders';

const sendNotificationSchema = z.object({
  to: z.email(),
  subject: z.string().check(z.minLength(1), z.maxLength(200)),
  body: z.string().check(z.minLength(1), z.maxLength(100_000)),
});

/** The gateway answered 5xx, 408 or 429: it did not send the notification; a later try may succeed. */
export class NotificationGatewayUnavailableError extends OncelyError {
  static override readonly errorName: string = 'NotificationGatewayUnavailableError';
  readonly retryable = true;
}

/** The gateway refused the notification (a 4xx other than 408/429): sending it again cannot help. */
export class NotificationRefusedError extends NonRetryableError {
  static override readonly errorName: string = 'NotificationRefusedError';
}

/**
 * `SendNotification`: POSTs `{ to, subject, body }` to an e-mail gateway, in lease mode. At-most-once
 * (the default) parks a notification whose outcome is unknown (a timeout after the request went
 * out) IN_DOUBT, never sending it twice; at-least-once re-sends it instead. The idempotency key goes
 * along so the gateway can dedupe too.
 */
export function notificationOperation(gateway: {
  url: string;
  timeoutMs: number;
  mode?: IdempotencyMode;
  /** The records' namespace; `notifications` by default. */
  namespace?: string;
}): ConsumerOperation {
  return leaseOperation({
    namespace: gateway.namespace ?? NOTIFICATIONS_NAMESPACE,
    mode: gateway.mode ?? 'at-most-once',
    payload: sendNotificationSchema,
    run: async ({ payload }, { idempotencyKey }) => {
      const answer = await postJson(gateway.url, payload, {
        headers: { 'Idempotency-Key': idempotencyKey },
        timeoutMs: gateway.timeoutMs,
      });
      return { status: accepted(answer) };
    },
  });
}

/**
 * `SendReminder`: the same e-mail, always at-least-once. A reminder must not be lost and may go twice
 * after an unknown outcome: the gateway dedupes it by its Idempotency-Key (`reminders#<key>`).
 */
export function reminderOperation(gateway: { url: string; timeoutMs: number }): ConsumerOperation {
  return notificationOperation({ ...gateway, mode: 'at-least-once', namespace: REMINDERS_NAMESPACE });
}

function accepted({ status, body }: HttpAnswer): number {
  if (status >= 200 && status < 300) return status;
  const answer = `the notification gateway answered ${status}${body ? `: ${body.slice(0, 200)}` : ''}`;
  if (status === 408 || status === 429 || status >= 500) {
    throw new NotificationGatewayUnavailableError(`${answer}. Nothing was sent; SQS redelivers the message.`);
  }
  throw new NotificationRefusedError(`${answer}. Fix the notification, then publish it again.`);
}
