import { OncelyConfigurationError } from 'oncely/consumer';
import type { IdempotencyMode } from 'oncely/idempotency';
import * as z from 'zod/mini';
import '../shared/zod-english.js';

/**
 * The shop consumer's own environment variables, which its stack sets beside those Oncely's
 * construct sets for `fifoBatch` (`CONSUMER_ENVIRONMENT` of `oncely/consumer`).
 */
export const SHOP_ENVIRONMENT = {
  ledgerTableName: 'LEDGER_TABLE_NAME',
  notificationUrl: 'NOTIFICATION_URL',
  /** Optional: how long a notification POST may take before its outcome counts as unknown. */
  notificationTimeoutMs: 'NOTIFICATION_TIMEOUT_MS',
  /** Optional: `at-most-once` (default: a crashed send is parked IN_DOUBT) or `at-least-once` (it is re-sent). */
  notificationMode: 'NOTIFICATION_MODE',
} as const;

export const DEFAULT_NOTIFICATION_TIMEOUT_MS = 5_000;

const required = (name: string) => z.string(`${name} is not set`).check(z.minLength(1, `${name} is empty`));
const { ledgerTableName, notificationUrl, notificationTimeoutMs, notificationMode } = SHOP_ENVIRONMENT;
const environmentSchema = z.object({
  [ledgerTableName]: required(ledgerTableName),
  [notificationUrl]: z.pipe(
    required(notificationUrl),
    z.url({ protocol: /^https?$/, error: `${notificationUrl} must be an http(s) URL` }),
  ),
  [notificationTimeoutMs]: z.optional(
    z.coerce
      .number<string>(`${notificationTimeoutMs} must be a whole number`)
      .check(
        z.int(`${notificationTimeoutMs} must be a whole number`),
        z.positive(`${notificationTimeoutMs} must be positive`),
      ),
  ),
  [notificationMode]: z.optional(
    z.enum(['at-most-once', 'at-least-once'], `${notificationMode} must be at-most-once or at-least-once`),
  ),
});

export interface ShopConfig {
  ledgerTableName: string;
  notificationUrl: string;
  notificationTimeoutMs: number;
  notificationMode: IdempotencyMode;
}

/** Reads and checks the shop consumer's environment; the error names every missing or invalid variable. */
export function readShopConfig(environment: NodeJS.ProcessEnv = process.env): ShopConfig {
  const parsed = environmentSchema.safeParse(environment);
  if (!parsed.success) {
    const { issues } = parsed.error;
    throw new OncelyConfigurationError(
      issues.map((issue) => String(issue.path[0])),
      `The shop consumer's environment is incomplete or invalid: ${issues.map((issue) => issue.message).join('; ')}. ` +
        'Its stack (lib/shop/shop-stack.ts) sets these variables.',
    );
  }
  const env = parsed.data;
  return {
    ledgerTableName: env[ledgerTableName],
    notificationUrl: env[notificationUrl],
    notificationTimeoutMs: env[notificationTimeoutMs] ?? DEFAULT_NOTIFICATION_TIMEOUT_MS,
    notificationMode: env[notificationMode] ?? 'at-most-once',
  };
}
