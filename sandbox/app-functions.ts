import { OncelyError } from '../lambdas/common/oncely-error.js';
import { limitConcurrency } from './function-concurrency.js';
import { FunctionMetrics } from './function-metrics.js';
import { type FunctionOutput, type FunctionUsage, LocalFunctionRuntime } from './function-runtime.js';
import type { InvocationResult, LocalInvoker } from './lambda-context.js';
import { forgetNodeBinaries, installLambdaNode, lambdaNodeCache, nodeBinaryFor } from './node-binary.js';
import type { LocalFunction } from './provision.js';

export interface AppFunctionsOptions {
  /** The app's directory: its functions' project directory, and where a Node.js it installs goes. */
  appDirectory: string;
  /** A function's environment as it runs here, from the template's. */
  environmentOf: (fn: LocalFunction) => Record<string, string>;
  /** Receives every line the functions write (`SandboxOptions.functionOutput`). */
  functionOutput?: FunctionOutput;
  /** Freezes each container between invocations (`SandboxOptions.freezeFunctions`). */
  freeze?: boolean;
  /** Installs each Node.js major the runtimes name that no Node found here has (`SandboxOptions.installNode`). */
  installNode?: boolean;
}

/** The app's functions running locally, each invoked through its reserved concurrency and counted, as on AWS. */
export interface AppFunctions {
  /** Each function's invoker, by name: what the sources and the Lambda endpoint invoke. */
  readonly invokers: ReadonlyMap<string, LocalInvoker>;
  /** Each function's invocations, errors and throttles by minute, as Lambda counts them for CloudWatch. */
  readonly metrics: FunctionMetrics;
  /** Invokes a function by name or ARN. */
  invoke(functionName: string, event: unknown, awsRequestId?: string): Promise<InvocationResult>;
  /** Each function's containers: CPU, invocations and heap per running container. */
  usage(): Record<string, FunctionUsage>;
  /** Stops every function's containers. */
  stop(): Promise<void>;
}

/** Raised when an invocation names a function the app does not have. */
export class UnknownFunctionError extends OncelyError {
  static override readonly errorName: string = 'UnknownFunctionError';
  readonly retryable = false;
}

/** Each of the functions in a runtime of its own, on its runtime's Node.js major where one is found. */
export function startAppFunctions(
  functions: readonly LocalFunction[],
  options: AppFunctionsOptions,
): AppFunctions {
  if (options.installNode) installMissingNodes(functions, options.appDirectory);
  const runtimes = new Map(functions.map((fn) => [fn.name, startRuntime(fn, options)]));
  // Every source invokes through the function's reserved concurrency, as on AWS.
  const reserved = new Map(functions.map((fn) => [fn.name, fn.reservedConcurrency]));
  const metrics = new FunctionMetrics();
  const invokers = new Map(
    [...runtimes].map(([name, runtime]) => [
      name,
      metrics.counted(name, limitConcurrency(runtime, reserved.get(name))),
    ]),
  );
  return {
    invokers,
    metrics,
    invoke: (functionName, event, awsRequestId) => {
      const name = runtimes.has(functionName)
        ? functionName
        : [...runtimes.values()].find((r) => r.spec.arn === functionName)?.spec.name;
      const invoker = name === undefined ? undefined : invokers.get(name);
      if (!invoker) {
        throw new UnknownFunctionError(
          `Function not found: ${functionName}. The app has ${[...runtimes.keys()].join(', ')}.`,
        );
      }
      return invoker.invoke(event, awsRequestId);
    },
    usage: () => Object.fromEntries([...runtimes].map(([name, runtime]) => [name, runtime.usage()])),
    stop: async () => {
      await Promise.all([...runtimes.values()].map((runtime) => runtime.stop()));
    },
  };
}

function startRuntime(fn: LocalFunction, options: AppFunctionsOptions): LocalFunctionRuntime {
  const runtime = new LocalFunctionRuntime(
    { ...fn, environment: options.environmentOf(fn) },
    options.functionOutput,
    {
      freeze: options.freeze,
      projectDirectory: options.appDirectory,
    },
  );
  if (!runtime.node.matches) {
    console.warn(
      `oncely local: function ${fn.name} (${fn.runtime}) runs on this machine's Node.js ${runtime.node.version}: no Node.js ${runtime.node.wantedMajor} found (add --install-node to install it once).`,
    );
  }
  return runtime;
}

/**
 * Installs each Node.js major the functions' runtimes name that no Node found here has
 * (`installNode`), so that every function runs on its runtime's major.
 */
function installMissingNodes(functions: readonly { runtime: string }[], appDirectory: string): void {
  const missing = new Set<number>();
  for (const fn of functions) {
    const node = nodeBinaryFor(fn.runtime, appDirectory);
    if (!node.matches && node.wantedMajor !== undefined) missing.add(node.wantedMajor);
  }
  for (const major of missing) {
    console.log(
      `oncely local: installing Node.js ${major} into ${lambdaNodeCache(major, appDirectory)} (once)…`,
    );
    installLambdaNode(major, appDirectory);
  }
  forgetNodeBinaries();
}
