import type { ValkeyScriptClient } from '../../lambdas/idempotency/valkey-store.js';

/** Counts a client's EVALSHA and EVAL calls: each is one round trip to the server. */
export function countScripts(client: ValkeyScriptClient) {
  const calls: { command: 'evalsha' | 'eval'; sha?: string }[] = [];
  const counted: ValkeyScriptClient = {
    evalsha: (sha, ...args) => {
      calls.push({ command: 'evalsha', sha });
      return client.evalsha(sha, ...args);
    },
    eval: (script, ...args) => {
      calls.push({ command: 'eval' });
      return client.eval(script, ...args);
    },
  };
  return {
    client: counted,
    calls,
    total: () => calls.length,
    reset: () => {
      calls.length = 0;
    },
  };
}
