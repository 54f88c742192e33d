import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { groupAlive } from '../support/process-group.js';

describe('interrupting a process that runs DynamoDB Local', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`takes the JVM down on ${signal}`, async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/hold-dynamodb-local.ts'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      const { pid } = JSON.parse(line) as { pid: number };
      expect(groupAlive(pid)).toBe(true);

      child.kill(signal);
      const [code, received] = await once(child, 'exit');
      expect(code === null ? received : code).not.toBe(0); // it still dies of the signal
      await expect.poll(() => groupAlive(pid), { timeout: 5_000 }).toBe(false);
    });
  }
});
