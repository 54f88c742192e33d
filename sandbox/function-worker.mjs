// One local "container" of a Lambda function: loads the handler from the function's code once (its
// init), then runs one invocation at a time with a Lambda-like context, answering as Lambda's Node.js
// runtime does. The code is plain JavaScript, as Lambda runs it (the function's bundled asset), and
// so is this file: a worker thread loads no TypeScript.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { threadCpuMs } from './thread-cpu.mjs';

const { codeDirectory, handler } = workerData;

// As in Lambda, a rejection nobody handles fails the invocation and ends the container: thrown
// here, it reaches the main thread as the worker's error.
process.on('unhandledRejection', (reason) => {
  throw Object.assign(new Error(String(reason)), { name: 'Runtime.UnhandledPromiseRejection' });
});

const loaded = await loadHandler();
if (loaded.error) {
  parentPort.postMessage({ initError: loaded.error, ...usage() });
} else {
  parentPort.on('message', async ({ id, eventJson, deadline, context: data }) => {
    const event = JSON.parse(eventJson);
    // lambda-context.ts's context: its data as the main thread built it, its methods again here.
    const context = {
      ...data,
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
      done: () => undefined,
      fail: () => undefined,
      succeed: () => undefined,
    };
    let reply;
    try {
      reply = { id, payload: serialize(await loaded.handler(event, context)) };
    } catch (thrown) {
      reply = { id, error: functionError(thrown) };
    }
    parentPort.postMessage({ ...reply, ...usage() });
  });
  parentPort.postMessage({ ready: true, ...usage() });
}

/**
 * What this container has used so far, sent with each answer: its thread's CPU time in ms since the
 * thread started (none without Linux's /proc) and its isolate's heap in use, in bytes.
 */
function usage() {
  const cpuMs = threadCpuMs();
  return { ...(cpuMs === undefined ? {} : { cpuMs }), heapUsedBytes: getHeapStatistics().used_heap_size };
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
  } catch (error) {
    throw new Error(`Unable to stringify response body: ${error.message}`);
  }
}
