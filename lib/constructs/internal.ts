/**
 * `oncely/internal`: what Oncely's own tools share and the example app's demo reads (the outbox's
 * item layout). **Not part of the public contract**: it changes without notice, in any release,
 * and the API report (docs/api/) leaves it out. Build on `oncely/outbox` and `oncely outbox list`.
 */

export {
  OUTBOX_ATTRIBUTES,
  OUTBOX_PENDING_INDEX,
  PENDING_SHARD_VALUES,
} from '../../lambdas/outbox/layout.js';
