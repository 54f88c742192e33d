// One local "container" of a Lambda function: loads the TypeScript handler once (its init), then
// runs one invocation at a time with a Lambda-like context, answering as Lambda's Node.js runtime
// does. Plain JS, so it needs no loader itself.
import { parentPort, workerData } from 'node:worker_threads';
import { tsImport } from 'tsx/esm/api';

const { entry, exportName, functionName, functionArn, memoryMiB } = workerData;
const { lambdaContext, functionError } = await tsImport('./lambda-context.ts', import.meta.url);

// As in Lambda, a rejection nobody handles fails the invocation and ends the container: thrown
// here, it reaches the main thread as the worker's error.
process.on('unhandledRejection', (reason) => {
  throw Object.assign(new Error(String(reason)), { name: 'Runtime.UnhandledPromiseRejection' });
});

const loaded = await loadHandler();
if (loaded.error) {
  parentPort.postMessage({ initError: loaded.error });
} else {
  parentPort.on('message', async ({ id, eventJson, deadline, awsRequestId }) => {
    const event = JSON.parse(eventJson);
    const context = lambdaContext({ functionName, functionArn, awsRequestId, deadline, memoryMiB });
    let reply;
    try {
      reply = { id, payload: serialize(await loaded.handler(event, context)) };
    } catch (thrown) {
      reply = { id, error: functionError(thrown) };
    }
    parentPort.postMessage(reply);
  });
  parentPort.postMessage({ ready: true });
}

/** The handler, or the init error Lambda's runtime reports instead of invoking it. */
async function loadHandler() {
  let module;
  try {
    module = await tsImport(entry, import.meta.url);
  } catch (thrown) {
    const error = functionError(thrown);
    const missing = thrown?.code === 'ERR_MODULE_NOT_FOUND' || thrown?.code === 'MODULE_NOT_FOUND';
    return { error: missing ? { ...error, errorType: 'Runtime.ImportModuleError' } : error };
  }
  const handler = module[exportName];
  if (typeof handler === 'function') return { handler };
  const errorMessage = `${entry} does not export a function named "${exportName}"`;
  return { error: { errorType: 'Runtime.HandlerNotFound', errorMessage, trace: [] } };
}

/**
 * The result as Lambda's runtime sends it back: JSON text (`null` for nothing), so what cannot be
 * JSON is dropped or fails as it would there, and any result crosses to the main thread.
 */
function serialize(result) {
  try {
    return JSON.stringify(result === undefined ? null : result) ?? 'null';
  } catch (error) {
    throw new Error(`Unable to stringify response body: ${error.message}`);
  }
}
