import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';
import { type FunctionError, type InvocationResult, type LocalInvoker, timeoutError } from './lambda-context';

export interface LocalFunctionSpec {
  name: string;
  arn: string;
  /** TypeScript module path, relative to `projectRoot`. */
  entry: string;
  exportName: string;
  timeoutSeconds: number;
  memoryMiB?: number;
  /** The function's environment, resolved to local resources. */
  environment: Record<string, string>;
}

/** Receives each line a function writes (its logs and EMF metrics); without it they go to this process's output. */
export type FunctionOutput = (line: string, functionName: string) => void;

const WORKER = new URL('./function-worker.mjs', import.meta.url);

/**
 * Runs one Lambda function locally. Each invocation gets a worker thread of its own, reused once
 * it is free (a warm container): one invocation at a time per worker, as in Lambda, and each
 * function with its own `process.env`. An invocation past its timeout has its worker terminated,
 * like a timed-out Lambda sandbox, and is reported with Lambda's timeout error.
 */
export class LocalFunctionRuntime implements LocalInvoker {
  readonly #spec: LocalFunctionSpec;
  readonly #projectRoot: string;
  readonly #idle: Worker[] = [];
  readonly #all = new Set<Worker>();
  #stopped = false;

  readonly #output: FunctionOutput | undefined;

  constructor(spec: LocalFunctionSpec, projectRoot: string, output?: FunctionOutput) {
    this.#spec = spec;
    this.#projectRoot = projectRoot;
    this.#output = output;
  }

  get spec(): LocalFunctionSpec {
    return this.#spec;
  }

  async invoke(event: unknown, awsRequestId: string = randomUUID()): Promise<InvocationResult> {
    if (this.#stopped) throw new Error(`function ${this.#spec.name} is stopped`);
    const worker = this.#idle.pop() ?? (await this.#startWorker());
    const timeoutMs = this.#spec.timeoutSeconds * 1000;
    const outcome = await new Promise<InvocationResult | 'timeout' | 'crash'>((resolve) => {
      const timer = setTimeout(() => resolve('timeout'), timeoutMs);
      const onMessage = (message: { id: string; result?: unknown; error?: FunctionError }) => {
        if (message.id !== awsRequestId) return;
        cleanup();
        resolve(message.error ? { ok: false, error: message.error } : { ok: true, result: message.result });
      };
      const onExit = () => {
        cleanup();
        resolve('crash');
      };
      const cleanup = () => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('exit', onExit);
      };
      worker.on('message', onMessage);
      worker.once('exit', onExit);
      worker.postMessage({ id: awsRequestId, event, deadline: Date.now() + timeoutMs, awsRequestId });
    });
    if (outcome === 'timeout' || outcome === 'crash') {
      this.#all.delete(worker);
      await worker.terminate();
      return {
        ok: false,
        error:
          outcome === 'timeout'
            ? timeoutError(awsRequestId, timeoutMs)
            : {
                errorType: 'Runtime.ExitError',
                errorMessage: 'the function’s process exited during the invocation',
              },
      };
    }
    if (this.#stopped) await worker.terminate();
    else this.#idle.push(worker);
    return outcome;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#idle.length = 0;
    await Promise.all([...this.#all].map((worker) => worker.terminate()));
    this.#all.clear();
  }

  /** Starts a worker and waits for its handler module to load (the function's init phase). */
  async #startWorker(): Promise<Worker> {
    const spec = this.#spec;
    const worker = new Worker(WORKER, {
      env: { ...spec.environment, AWS_LAMBDA_FUNCTION_NAME: spec.name },
      workerData: {
        entry: new URL(`file://${join(this.#projectRoot, spec.entry)}`).href,
        exportName: spec.exportName,
        functionName: spec.name,
        functionArn: spec.arn,
        memoryMiB: spec.memoryMiB ?? 128,
      },
      stdout: this.#output !== undefined,
      stderr: this.#output !== undefined,
    });
    if (this.#output) {
      const output = this.#output;
      for (const stream of [worker.stdout, worker.stderr]) {
        createInterface({ input: stream }).on('line', (line) => output(line, spec.name));
      }
    }
    this.#all.add(worker);
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) =>
        reject(
          new Error(`function ${spec.name} failed to initialise from ${spec.entry}: ${error.message}`, {
            cause: error,
          }),
        );
      worker.once('error', onError);
      worker.once('message', () => {
        worker.off('error', onError);
        resolve();
      });
    });
    // An error outside an invocation (a stray rejection) ends this container, as it would in Lambda.
    worker.on('error', () => {
      this.#all.delete(worker);
      const index = this.#idle.indexOf(worker);
      if (index >= 0) this.#idle.splice(index, 1);
    });
    return worker;
  }
}
