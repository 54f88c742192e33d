import { fifoBatch, leaseOperation } from 'oncely/consumer';

// The same as `consumer.ts` with the default telemetry: `fifoBatch()` starts importing Powertools'
// Logger and Metrics, which a bundle then evaluates before the init ends.
const ping = leaseOperation({ namespace: 'ping', mode: 'at-least-once', run: () => undefined });

export const consumer = fifoBatch({ operations: { Ping: ping } });
