// One local "container" of a Lambda function, a child process of the sandbox's: loads the handler
// from the function's code once (its init), then runs one invocation at a time (or, as on Lambda
// Managed Instances, up to AWS_LAMBDA_MAX_CONCURRENCY at once: see `managed` below) with a Lambda-like
// context, answering as the Lambda Node.js runtime of the function's `AWS_EXECUTION_ENV` does. The
// code is plain JavaScript, as Lambda runs it (the function's bundled asset), and so is this file:
// the child loads no TypeScript, on whichever Node.js major the function's runtime names.
import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { threadCpuMs } from './thread-cpu.mjs';

/** V8's young generation: garbage there is collected often, and its size swings with the load. */
const YOUNG_SPACES = new Set(['new_space', 'new_large_object_space']);

const codeDirectory = process.env.LAMBDA_TASK_ROOT;
const handler = process.env._HANDLER;
/**
 * Lambda's Node.js runtimes come in two families: up to nodejs22.x, the runtime interface client
 * 3.x (callbacks, `context.succeed/fail/done`, `callbackWaitsForEmptyEventLoop`); from nodejs24.x,
 * 4.x (an async or plain return only). See aws/aws-lambda-nodejs-runtime-interface-client: 3.x's
 * src/Runtime.js and src/CallbackContext.js, 4.x's src/runtime/buffered-invoke-processor.ts.
 */
const major = Number(/^AWS_Lambda_nodejs(\d+)\.x$/.exec(process.env.AWS_EXECUTION_ENV ?? '')?.[1] ?? 24);
const callbacks = major < 24;
/**
 * Lambda Managed Instances: several invocations at once in this one process, as that runtime runs
 * them in each of its worker threads. It gives every invocation an async context of its own, the
 * `InvokeStore` it puts on `globalThis.awslambda` before the handler loads (@aws/lambda-invoke-store:
 * `InvokeStoreMulti`, an AsyncLocalStorage, with the request id under its protected key); Powertools
 * keeps its per-invocation state there when `AWS_LAMBDA_MAX_CONCURRENCY` is set. Its handlers are
 * awaited (the async interface): a callback handler could not share the process's event loop.
 */
const managed = process.env.AWS_LAMBDA_MAX_CONCURRENCY !== undefined;
/** The key @aws/lambda-invoke-store reads an invocation's request id under. */
const REQUEST_ID = Symbol.for('_AWS_LAMBDA_REQUEST_ID');
const invokeStore = managed ? installInvokeStore() : undefined;

// The sandbox went away (stopped, or killed): a container never outlives it.
process.on('disconnect', () => process.exit(0));

/** Sends a message to the sandbox, then runs `then` once it is written. */
const send = (message, then) => process.send(message, then);

// As in Lambda, an error nobody catches (a stray timer's) or a rejection nobody handles fails the
// invocation and ends the container: the sandbox gets the error, then the exit (129 and 128, as
// the runtime interface client exits).
process.on('uncaughtException', (error) => {
  send({ crash: functionError(error) }, () => process.exit(129));
});
process.on('unhandledRejection', (reason) => {
  const crash = { errorType: 'Runtime.UnhandledPromiseRejection', errorMessage: String(reason), trace: [] };
  send({ crash }, () => process.exit(128));
});

/**
 * With the sandbox collecting traces (`ONCELY_LOCAL_TRACES`, its collector's endpoint), the SDK is
 * registered before the handler loads, as the ADOT layer's wrapper does on AWS (trace-layer.mjs).
 */
const tracing = await startTracing(process.env.ONCELY_LOCAL_TRACES);

const loaded = refuseCallbacks(await loadHandler());
if (loaded.error) {
  send({ initError: loaded.error, ...usage() });
} else {
  process.on('message', async ({ id, eventJson, deadline, context: data }) => {
    const event = JSON.parse(eventJson);
    const getRemainingTimeInMillis = () => Math.max(0, deadline - Date.now());
    const context = { ...data, getRemainingTimeInMillis };
    const invoke = () =>
      invokeStore
        ? invokeStore.run({ [REQUEST_ID]: id }, () => invokeAsync(loaded.handler, event, context))
        : callbacks
          ? invokeWithCallbacks(loaded.handler, event, context)
          : invokeAsync(loaded.handler, event, context);
    const reply = tracing ? await tracing.around(event, context, invoke) : await invoke();
    send({ id, ...reply, ...usage() });
  });
  send({ ready: true, ...usage() });
}

/** The trace layer, or none: without an endpoint, or when the SDK cannot load (said once, on stderr). */
async function startTracing(endpoint) {
  if (!endpoint) return undefined;
  try {
    const layer = await import('./trace-layer.mjs');
    return layer.startTracing(endpoint);
  } catch (error) {
    console.error(`oncely local: no traces from this function, the OpenTelemetry SDK did not load: ${error}`);
    return undefined;
  }
}

/**
 * The `InvokeStore` of Lambda Managed Instances' Node.js runtime, as @aws/lambda-invoke-store's
 * `InvokeStoreMulti` is (the interface its users call): each invocation's store an object in an
 * AsyncLocalStorage, its protected keys (the request id) not writable by the handler. Put where that
 * library and Powertools look for the runtime's own (`globalThis.awslambda.InvokeStore`).
 */
function installInvokeStore() {
  const als = new AsyncLocalStorage();
  const store = {
    getContext: () => als.getStore(),
    hasContext: () => als.getStore() !== undefined,
    get: (key) => als.getStore()?.[key],
    set: (key, value) => {
      if (key === REQUEST_ID) throw new Error(`Cannot modify protected Lambda context field: ${String(key)}`);
      const current = als.getStore();
      if (!current) throw new Error('No context available');
      current[key] = value;
    },
    run: (context, fn) => als.run(context, fn),
    getRequestId: () => als.getStore()?.[REQUEST_ID] ?? '-',
    getXRayTraceId: () => undefined,
    getTenantId: () => undefined,
  };
  globalThis.awslambda = globalThis.awslambda ?? {};
  globalThis.awslambda.InvokeStore = store;
  return store;
}

/**
 * From nodejs24.x, a handler declaring a third (callback) parameter fails the init, async or not:
 * the runtime interface client 4.x's errorOnDeprecatedCallback, with its message.
 */
function refuseCallbacks(loaded) {
  if (callbacks || loaded.error || loaded.handler.length < 3) return loaded;
  const errorMessage = `ERROR: AWS Lambda has removed support for callback-based function handlers starting with Node.js 24. You need to modify this function to use a supported handler signature to use Node.js 24 or later. For more information see https://docs.aws.amazon.com/lambda/latest/dg/nodejs-handler.html.`;
  return { error: { errorType: 'Runtime.CallbackHandlerDeprecated', errorMessage, trace: [] } };
}

/** Runtime interface client 4.x (nodejs24.x): the handler's return value, awaited, or what it threw. */
async function invokeAsync(handlerFunction, event, context) {
  try {
    return { payload: serialize(await handlerFunction(event, context)) };
  } catch (thrown) {
    return { error: functionError(thrown) };
  }
}

/**
 * Runtime interface client 3.x (nodejs22.x and before), as its Runtime.js and CallbackContext.js
 * do: a promise the handler returns answers once it settles; otherwise the first of `callback`
 * (after the event loop empties, unless `callbackWaitsForEmptyEventLoop` is false) and
 * `context.succeed/fail/done` (at once) answers; a handler that never answers gets `null` once the
 * event loop is empty, or `Runtime.NodeJsExit` if it is an async function. A synchronous return
 * value is not the answer.
 */
function invokeWithCallbacks(handlerFunction, event, data) {
  return new Promise((resolve) => {
    // The channel to the sandbox must not count as work, for the event loop to empty.
    process.channel?.unref();
    let answered = false;
    const answer = (reply) => {
      if (answered) return;
      answered = true;
      process.removeListener('beforeExit', beforeExit);
      process.channel?.ref();
      resolve(reply);
    };
    const complete = (result) => {
      try {
        answer({ payload: serialize(result) });
      } catch (thrown) {
        answer({ error: functionError(thrown) });
      }
    };
    const fail = (error) => answer({ error: functionError(error) });
    let onEmptyLoop = () => {
      if (handlerFunction.constructor?.name === 'AsyncFunction') {
        const message =
          'The Lambda runtime client detected an unexpected Node.js exit code. This is most commonly caused by a Promise that was never settled. For more information, see https://nodejs.org/docs/latest/api/process.html#exit-codes';
        answer({ error: { errorType: 'Runtime.NodeJsExit', errorMessage: message, trace: [] } });
      } else complete(null);
    };
    const beforeExit = () => onEmptyLoop();
    process.on('beforeExit', beforeExit);
    let waitForEmptyEventLoop = true;
    const done = (error, result) => (error !== undefined && error !== null ? fail(error) : complete(result));
    const context = {
      ...data,
      get callbackWaitsForEmptyEventLoop() {
        return waitForEmptyEventLoop;
      },
      set callbackWaitsForEmptyEventLoop(value) {
        waitForEmptyEventLoop = value;
      },
      done,
      succeed: (result) => done(null, result),
      fail: (error) => done(error === undefined || error === null ? 'handled' : error, null),
    };
    const callback = (error, result) => {
      if (error !== undefined && error !== null) fail(error);
      else if (!waitForEmptyEventLoop) complete(result);
      else onEmptyLoop = () => setImmediate(() => complete(result));
    };
    try {
      const returned = handlerFunction(event, context, callback);
      if (typeof returned?.then === 'function') {
        returned.then(context.succeed, context.fail).catch(context.fail);
      }
    } catch (thrown) {
      callback(thrown);
    }
  });
}

/**
 * What this container has used so far, sent with each answer: its main thread's CPU time in ms
 * since it started (none without Linux's /proc), its whole process's (every thread: V8's and
 * libuv's helpers too) in ms, and its heap in use, in bytes: the whole of it, and its old generation
 * alone (what survived the young generation's collections: where anything kept per message ends up).
 */
function usage() {
  const cpuMs = threadCpuMs();
  const { user, system } = process.cpuUsage();
  return {
    ...(cpuMs === undefined ? {} : { cpuMs }),
    processCpuMs: (user + system) / 1000,
    heapUsedBytes: getHeapStatistics().used_heap_size,
    oldHeapUsedBytes: getHeapSpaceStatistics()
      .filter((space) => !YOUNG_SPACES.has(space.space_name))
      .reduce((sum, space) => sum + space.space_used_size, 0),
  };
}

/**
 * The handler `Handler` names, found and loaded as Lambda's Node.js runtime does — `[dir/]module.export`,
 * the module `module.js` (required, or imported if a `package.json` says `"type": "module"`), else
 * `.mjs` (imported), else `.cjs` (required), the export a dotted path — or the init error that
 * runtime reports instead of invoking it.
 */
async function loadHandler() {
  const moduleAndExport = basename(handler);
  const match = /^([^.]*)\.(.*)$/.exec(moduleAndExport);
  if (!match || handler.includes('..')) {
    return {
      error: { errorType: 'Runtime.MalformedHandlerName', errorMessage: `Bad handler ${handler}`, trace: [] },
    };
  }
  const [, moduleName, exportPath] = match;
  const modulePath = join(codeDirectory, handler.slice(0, -moduleAndExport.length), moduleName);
  const file = ['.js', '.mjs', '.cjs'].map((extension) => modulePath + extension).find(existsSync);
  let module;
  try {
    if (!file) throw new Error(`Cannot find module '${moduleName}'`);
    const type = file.endsWith('.js') ? packageType(dirname(file), codeDirectory) : undefined;
    // Lambda would require this file (nothing above its task root says otherwise); Node would not.
    if (file.endsWith('.js') && !type && packageType(dirname(codeDirectory)) === 'module') {
      return { error: readAsEsModule(file) };
    }
    const esModule = file.endsWith('.mjs') || type === 'module';
    module = esModule ? await import(pathToFileURL(file).href) : createRequire(file)(file);
  } catch (thrown) {
    const missing = !file || thrown?.code === 'ERR_MODULE_NOT_FOUND' || thrown?.code === 'MODULE_NOT_FOUND';
    if (!missing) return { error: functionError(thrown) };
    return {
      error: {
        ...functionError(thrown),
        errorType: 'Runtime.ImportModuleError',
        errorMessage: String(thrown),
      },
    };
  }
  const find = (object) => exportPath.split('.').reduce((nested, key) => nested?.[key], object);
  // A CommonJS module's exports are its namespace's default when Node cannot list them statically.
  const found = find(module) ?? find(module.default);
  if (typeof found === 'function') return { handler: found };
  const errorMessage = `${handler} is ${found === undefined ? 'undefined or not exported' : 'not a function'}`;
  return { error: { errorType: 'Runtime.HandlerNotFound', errorMessage, trace: [] } };
}

/**
 * The `type` of the nearest `package.json` from `directory` up to `top` (the root if none), or
 * undefined if none says. Lambda looks up to `/`, but above its task root there is nothing; above
 * the code's directory here there is the cloud assembly's project, which Lambda never sees.
 */
function packageType(directory, top) {
  for (
    let current = directory;
    !top || !relative(top, current).startsWith('..');
    current = dirname(current)
  ) {
    const manifest = join(current, 'package.json');
    if (existsSync(manifest)) return JSON.parse(readFileSync(manifest, 'utf8')).type;
    if (dirname(current) === current) break;
  }
  return undefined;
}

/**
 * The init error for a `.js` file Lambda would require but Node would read as an ES module here: a
 * `package.json` above the code's directory (your project's) says `"type": "module"`, and the asset
 * has none of its own to say otherwise.
 */
function readAsEsModule(file) {
  return {
    errorType: 'Runtime.ImportModuleError',
    errorMessage:
      `${file} is CommonJS on Lambda, but Node would read it as an ES module here because a package.json above ` +
      'the function\'s code says "type": "module". Give the asset a package.json of its own saying ' +
      '"type": "commonjs" (LAMBDA_BUNDLING writes one), or bundle as ESM (index.mjs).',
    trace: [],
  };
}

/** As lambda-context.ts's functionError: what the Node.js runtime reports for a thrown value. */
function functionError(thrown) {
  if (thrown instanceof Error) {
    return { errorType: thrown.name, errorMessage: thrown.message, trace: thrown.stack?.split('\n') ?? [] };
  }
  return { errorType: typeof thrown, errorMessage: String(thrown), trace: [] };
}

/**
 * The result as Lambda's runtime sends it back: JSON text (`null` for nothing), so what cannot be
 * JSON is dropped or fails as it would there, and any result crosses to the main thread.
 */
function serialize(result) {
  try {
    return JSON.stringify(result === undefined ? null : result) ?? 'null';
  } catch {
    // Without the cause: 3.x throws an Error (RAPIDClient.js), 4.x a Runtime.JSONStringifyError
    // (src/utils/serialize.ts).
    const error = new Error('Unable to stringify response body');
    if (!callbacks) error.name = 'Runtime.JSONStringifyError';
    throw error;
  }
}
