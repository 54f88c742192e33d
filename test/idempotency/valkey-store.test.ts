import { randomUUID } from 'node:crypto';
import type { Redis } from 'iovalkey';
import { afterAll, beforeAll } from 'vitest';
import { VALKEY_SCRIPTS } from '../../lambdas/idempotency/valkey-scripts.js';
import { ValkeyIdempotencyStore } from '../../lambdas/idempotency/valkey-store.js';
import { countScripts, startValkey, type ValkeyServer } from '../support/valkey.js';
import { leaseContract } from './lease-contract.js';

// The Valkey store against a real redis-server of this file's own: the lease-mode contract
// (lease-contract.ts), then what is Valkey's own — one script a step, the NOSCRIPT fallback, a
// reply lost after the script applied, and each state's TTL.

let server: ValkeyServer;
let admin: Redis;

beforeAll(async () => {
  server = await startValkey();
  admin = server.client();
  // Loaded as a server that has served a store holds them: each step is then one EVALSHA. The
  // NOSCRIPT fallback has its own test.
  for (const script of Object.values(VALKEY_SCRIPTS)) await admin.script('LOAD', script.source);
});

afterAll(async () => {
  admin?.disconnect();
  await server?.stop();
});

/** Each test's records under a prefix of their own, so no test sees another's. */
const freshPrefix = () => `t-${randomUUID().slice(0, 8)}:`;

leaseContract('Valkey', async () => {
  const client = server.client();
  const scripts = countScripts(client);
  const keyPrefix = freshPrefix();
  return {
    store: (options) => new ValkeyIdempotencyStore({ client: scripts.client, keyPrefix, ...options }),
    read: async (id) => {
      const raw = await admin.get(`${keyPrefix}${id}`);
      return raw === null ? undefined : JSON.parse(raw);
    },
    roundTrips: () => scripts.total(),
    resetRoundTrips: () => scripts.reset(),
    reads: () => scripts.calls.filter((call) => call.sha === VALKEY_SCRIPTS.read.sha).length,
    close: () => client.disconnect(),
  };
});
