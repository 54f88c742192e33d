import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from './local-aws-config.js';
import { ensureSqsEmulatorPatched } from './sqs-emulator-patch.js';

const HOST = '127.0.0.1';

export interface SqsEmulator {
  readonly endpoint: string;
  readonly port: number;
  /**
   * Makes the queue URLs it hands out from now on (CreateQueue, GetQueueUrl, ListQueues) name this
   * loopback port instead of its own: an edge in front of it, as LocalStack's queue URLs name its one
   * endpoint. Requests find a queue by the URL's path, so either port reaches it.
   */
  nameQueuesAt(port: number): void;
  /**
   * Receives again the message `receiptHandle` was received with, as a second consumer's receive may on
   * SQS: a new receipt handle, which replaces the earlier ones (a delete with one of those changes
   * nothing, a visibility change is refused), and one more receive counted. For the sandbox's
   * duplicate deliveries; standard queues only. A message deleted meanwhile still gets a handle, as a
   * late duplicate does, and no `receiveCount`.
   */
  receiveAgain(queueUrl: string, receiptHandle: string): Redelivery;
  /**
   * When the oldest message each queue holds (visible, in flight or delayed) was sent, in epoch
   * milliseconds, by queue name; an empty queue is absent. For the sandbox's CloudWatch figures.
   */
  oldestSentAt(): Map<string, number>;
  stop(): Promise<void>;
}

/** A message received again: its new receipt handle, and its receive count if it is still there. */
export interface Redelivery {
  receiptHandle: string;
  receiveCount?: number;
}

export interface SqsEmulatorOptions {
  /** Port to listen on; a free one by default. */
  port?: number;
  /**
   * Harsher than SQS: a FIFO receive returns messages of one message group only (its longest run from
   * the head), where SQS, after as many of one group as it can, may add other groups' messages. So a
   * consumer's handling of a group it skips after a failure runs on every batch. `false` by default.
   */
  oneGroupPerReceive?: boolean;
}

/** A queue of the patched emulator, as far as the sandbox drives it directly (sqs-emulator-patch.ts). */
interface EmulatedQueue {
  QueueName: string;
  oncelyOldestSentAt(): number | undefined;
  oncelyReceiveAgain(receiptHandle: string): { ReceiptHandle: string; ApproximateReceiveCount?: string };
}

/** Raised when the emulator cannot listen, e.g. because the requested port is taken. */
export class SqsEmulatorStartError extends OncelyError {
  static override readonly errorName: string = 'SqsEmulatorStartError';
  readonly retryable = false;
}

/**
 * Starts the local-aws-sqs emulator (patched for Oncely's FIFO semantics, see sqs-emulator-patch.ts)
 * in this process on a loopback port; queue URLs point at it.
 *
 * It is driven through the package's request handler on our own HTTP server rather than its
 * `createSqsServer`, which has no listen error handling: a taken port crashes the process instead
 * of rejecting.
 */
export async function startSqsEmulator(options: SqsEmulatorOptions = {}): Promise<SqsEmulator> {
  // The patched copy of the bundle, beside the package's own (see sqs-emulator-patch.ts).
  const { createRequestHandler } = createRequire(import.meta.url)(
    ensureSqsEmulatorPatched(),
  ) as typeof import('local-aws-sqs');
  const requestedPort = options.port ?? 0;
  const { requestHandler, service } = createRequestHandler({
    port: requestedPort,
    hostname: HOST,
    region: LOCAL_REGION,
    accountId: LOCAL_ACCOUNT_ID,
    // Tests create and delete queues freely; AWS's 60 s wait before re-creating a name would only slow them.
    emulateQueueCreationLifecycle: false,
  });
  // Idle connections stay open until their client closes them (or stop() does): with Node's default
  // 5 s timeout, a client reusing an idle connection as the server closed it saw "socket hang up",
  // which a client with one attempt (the publisher's, a benchmark's) reports as a failed call.
  const server = createServer({ keepAliveTimeout: 0 }, requestHandler);
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', (error) =>
      reject(
        new SqsEmulatorStartError(`the SQS emulator could not listen on ${HOST}:${requestedPort}`, {
          cause: error,
        }),
      ),
    );
    server.listen(requestedPort, HOST, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
  // Queue URLs are built from the service's port: make them name the one actually bound.
  service.PORT = port;
  // Read by the patched FIFO receive (sqs-emulator-patch.ts).
  Object.assign(service, { oncelyOneGroupPerReceive: options.oneGroupPerReceive ?? false });
  const queues = () => (service as unknown as { Queues: EmulatedQueue[] }).Queues;

  return {
    endpoint: `http://${HOST}:${port}`,
    port,
    nameQueuesAt: (urlPort) => {
      service.PORT = urlPort;
    },
    receiveAgain: (queueUrl, receiptHandle) => {
      // The queue by the URL's last segment, as a request finds it.
      const name = new URL(queueUrl).pathname.split('/').pop();
      const queue = queues().find((candidate) => candidate.QueueName === name);
      if (!queue) throw new Error(`the SQS emulator has no queue ${queueUrl}`);
      const { ReceiptHandle, ApproximateReceiveCount } = queue.oncelyReceiveAgain(receiptHandle);
      return ApproximateReceiveCount === undefined
        ? { receiptHandle: ReceiptHandle }
        : { receiptHandle: ReceiptHandle, receiveCount: Number(ApproximateReceiveCount) };
    },
    oldestSentAt: () => {
      const oldest = new Map<string, number>();
      for (const queue of queues()) {
        const sentAt = queue.oncelyOldestSentAt();
        if (sentAt !== undefined) oldest.set(queue.QueueName, sentAt);
      }
      return oldest;
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // SDK clients keep connections alive, and a pending long poll holds one open: close() waits for them.
        server.closeAllConnections();
      }),
  };
}
