// One local "container" of a Lambda function: loads the TypeScript handler once (its init), then
// runs one invocation at a time with a Lambda-like context. Plain JS, so it needs no loader itself.
import { parentPort, workerData } from 'node:worker_threads';
import { tsImport } from 'tsx/esm/api';

const { entry, exportName, functionName, functionArn, memoryMiB } = workerData;
const { lambdaContext, functionError } = await tsImport('./lambda-context.ts', import.meta.url);
const handler = (await tsImport(entry, import.meta.url))[exportName];
if (typeof handler !== 'function') {
  throw new Error(`${entry} does not export a function named "${exportName}"`);
}

parentPort.on('message', async ({ id, event, deadline, awsRequestId }) => {
  const context = lambdaContext({ functionName, functionArn, awsRequestId, deadline, memoryMiB });
  try {
    parentPort.postMessage({ id, result: await handler(event, context) });
  } catch (thrown) {
    parentPort.postMessage({ id, error: functionError(thrown) });
  }
});
parentPort.postMessage({ ready: true });
