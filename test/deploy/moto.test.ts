import { createServer } from 'node:net';
import { CreateQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { groupAlive } from '../support/process-group.js';
import { awsClients, destroyClients } from './deployed-stack.js';
import { MotoUnavailableError, startMoto } from './moto.js';

// The deploy test's launcher of moto: what a user without moto is told, a start that fails, and
// a stop that leaves no process behind.

describe('the moto launcher', () => {
  it('names what to install when Python or moto is missing', async () => {
    const started = startMoto({ python: 'python3-that-is-not-installed' });
    await expect(started).rejects.toBeInstanceOf(MotoUnavailableError);
    await expect(started).rejects.toThrow(
      /python3-that-is-not-installed was not found.*pip install 'moto\[server\]/,
    );
  });

  it('reports a server that exits at start, with what it printed', { timeout: 60_000 }, async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const address = taken.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      await expect(startMoto({ port })).rejects.toThrow(
        /moto's server exited \(\d+\) at start:[\s\S]*in use/i,
      );
    } finally {
      taken.close();
    }
  });

  it('serves the AWS APIs at its endpoint, and stops its whole process group', {
    timeout: 60_000,
  }, async () => {
    const moto = await startMoto();
    const clients = awsClients(moto.endpoint);
    try {
      const { QueueUrl } = await clients.sqs.send(
        new CreateQueueCommand({ QueueName: 'launcher.fifo', Attributes: { FifoQueue: 'true' } }),
      );
      const { Attributes } = await clients.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['FifoQueue'] }),
      );
      expect(Attributes?.FifoQueue).toBe('true');
    } finally {
      destroyClients(clients);
    }
    const pid = moto.pid;
    expect(groupAlive(pid)).toBe(true);
    await moto.stop();
    expect(groupAlive(pid)).toBe(false);
  });
});
