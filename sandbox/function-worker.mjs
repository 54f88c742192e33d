// One local "container" of a Lambda function: loads the TypeScript handler once (its init), then
// runs one invocation at a time with a Lambda-like context. Plain JS, so it needs no loader itself.
import { parentPort, workerData } from 'node:worker_threads';
import { tsImport } from 'tsx/esm/api';

const { entry, exportName, functionName, functionArn, memoryMiB } = workerData;
const handler = (await tsImport(entry, import.meta.url))[exportName];
if (typeof handler !== 'function') {
  throw new Error(`${entry} does not export a function named "${exportName}"`);
}

parentPort.on('message', async ({ id, event, deadline, requestId }) => {
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: functionArn,
    memoryLimitInMB: String(memoryMiB),
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
  try {
    const result = await handler(event, context);
    parentPort.postMessage({ id, result });
  } catch (error) {
    const err = error instanceof Error ? error : new Error(String(error));
    parentPort.postMessage({
      id,
      error: { errorType: err.name, errorMessage: err.message, trace: (err.stack ?? '').split('\n') },
    });
  }
});
parentPort.postMessage({ ready: true });
