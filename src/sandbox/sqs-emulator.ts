import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { createRequestHandler } from 'local-aws-sqs';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from './local-aws-config.js';

/** Written by sandbox/patches/local-aws-sqs.mjs; keep the two in sync. */
const PATCH_MARKER = '/* oncely-patch v1 */';
const HOST = '127.0.0.1';

export interface SqsEmulator {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

export interface SqsEmulatorOptions {
  /** Port to listen on; a free one by default. */
  port?: number;
}

/** Raised when the installed local-aws-sqs lacks Oncely's FIFO fixes, so tests would pass on wrong semantics. */
export class SqsEmulatorNotPatchedError extends Error {
  override readonly name = 'SqsEmulatorNotPatchedError';
  constructor(file: string) {
    super(
      `local-aws-sqs at ${file} is not patched for FIFO group blocking, long polling and the 5-minute ` +
        'dedup window. Run `npm ci` (its postinstall applies the patch) or `node sandbox/patches/local-aws-sqs.mjs`.',
    );
  }
}

/** Raised when the emulator cannot listen, e.g. because the requested port is taken. */
export class SqsEmulatorStartError extends Error {
  override readonly name = 'SqsEmulatorStartError';
}

/**
 * Starts the local-aws-sqs emulator in this process on a loopback port; queue URLs point at it.
 *
 * It is driven through the package's request handler on our own HTTP server rather than its
 * `createSqsServer`, which has no listen error handling: a taken port crashes the process instead
 * of rejecting.
 *
 * Emulator quirk: ReceiveMessage only honours the legacy `AttributeNames` (e.g. `['All']`), not
 * `MessageSystemAttributeNames`; ask for `All` to get MessageGroupId, ApproximateReceiveCount etc.
 */
export async function startSqsEmulator(options: SqsEmulatorOptions = {}): Promise<SqsEmulator> {
  assertPatched();
  const requestedPort = options.port ?? 0;
  const { requestHandler, service } = createRequestHandler({
    port: requestedPort,
    hostname: HOST,
    region: LOCAL_REGION,
    accountId: LOCAL_ACCOUNT_ID,
    // Tests create and delete queues freely; AWS's 60 s wait before re-creating a name would only slow them.
    emulateQueueCreationLifecycle: false,
  });
  const server = createServer(requestHandler);
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

  return {
    endpoint: `http://${HOST}:${port}`,
    port,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // SDK clients keep connections alive, and a pending long poll holds one open: close() waits for them.
        server.closeAllConnections();
      }),
  };
}

function assertPatched(): void {
  const file = createRequire(import.meta.url).resolve('local-aws-sqs');
  if (!readFileSync(file, 'utf8').includes(PATCH_MARKER)) throw new SqsEmulatorNotPatchedError(file);
}
