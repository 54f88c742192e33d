import { fifoBatch, leaseOperation } from 'oncely/consumer';

// `oncely/consumer` alone, as a handler module makes its consumer at load, with Powertools telemetry
// off: one lease-mode operation, no validation, no business code, and no Middy (the user's choice,
// whose `.use()` this middleware goes into).
const ping = leaseOperation({ namespace: 'ping', mode: 'at-least-once', run: () => undefined });

export const consumer = fifoBatch({ operations: { Ping: ping }, telemetry: 'off' });
