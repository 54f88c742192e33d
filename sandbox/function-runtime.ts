import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';
import {
  type FunctionError,
  functionError,
  type InvocationResult,
  type LocalInvoker,
  lambdaContext,
  timeoutError,
} from './lambda-context.js';

export interface LocalFunctionSpec {
  name: string;
  arn: string;
  /** The function's code, as Lambda unpacks it into its task root: plain JavaScript, e.g. a bundled asset. */
  codeDirectory: string;
  /** Lambda's `Handler`: `[dir/]module.export`, the module a `.js`, `.mjs` or `.cjs` file of `codeDirectory`. */
  handler: string;
  timeoutSeconds: number;
  memoryMiB?: number;
  /** The function's environment, resolved to local resources. */
  environment: Record<string, string>;
}

/** Receives each line a function writes (its logs and EMF metrics); without it they go to this process's output. */
export type FunctionOutput = (line: string, functionName: string) => void;

const WORKER = new URL('./function-worker.mjs', import.meta.url);

/**
 * What a worker posts: its init's outcome, or an invocation's (the result as JSON text, or the
 * error), each with what the worker has used so far.
 */
interface WorkerMessage {
  ready?: true;
  initError?: FunctionError;
  id?: string;
  payload?: string;
  error?: FunctionError;
  /** The worker thread's CPU time since it started, in ms; absent without Linux's /proc. */
  cpuMs?: number;
  /** Its V8 isolate's heap in use, in bytes. */
  heapUsedBytes?: number;
}

/** What a function's workers have used, as {@link LocalFunctionRuntime.usage} reports it. */
export interface FunctionUsage {
  /**
   * The CPU time of the function's worker threads in ms (each from its start, its init included, up to
   * its last answer), those since replaced or stopped included; `undefined` without Linux's /proc.
   * Only the workers' own threads: not V8's helper threads (its GC's among them), not the main thread.
   */
  cpuMs: number | undefined;
  /** The invocations its workers answered, with a result or a function error. */
  invocations: number;
  /** The V8 heap in use of each running worker as of its last answer, in bytes. */
  heapUsedBytes: number[];
}

/** What a worker did next: answered, failed with an uncaught error, exited, or nothing in time. */
type WorkerOutcome =
  | { kind: 'message'; message: WorkerMessage }
  | { kind: 'error'; error: unknown }
  | { kind: 'exit'; code: number }
  | { kind: 'timeout' };

/**
 * Runs one Lambda function locally. Each invocation gets a worker thread of its own, reused once
 * it is free (a warm container): one invocation at a time per worker, as in Lambda, and each
 * function with its own `process.env`. Whatever goes wrong inside the function is answered as
 * Lambda answers it, with a function error. A thrown error (a stack overflow too) and a result
 * that is not JSON leave the container warm; these replace it with a fresh one: a handler module
 * that fails to load (its init error, e.g. `Runtime.ImportModuleError`), an uncaught error or
 * unhandled rejection (`Runtime.UnhandledPromiseRejection`), an exit (`Runtime.ExitError`), and an
 * invocation past its timeout (`Sandbox.Timedout`).
 */
export class LocalFunctionRuntime implements LocalInvoker {
  readonly #spec: LocalFunctionSpec;
  readonly #idle: Worker[] = [];
  readonly #all = new Set<Worker>();
  #stopped = false;
  /** The CPU time each worker reported last, and its heap; a worker leaves the heap map when it ends. */
  readonly #cpuMsOf = new WeakMap<Worker, number>();
  readonly #heapOf = new Map<Worker, number>();
  #cpuMs: number | undefined = 0;
  #invocations = 0;

  readonly #output: FunctionOutput | undefined;

  constructor(spec: LocalFunctionSpec, output?: FunctionOutput) {
    this.#spec = spec;
    this.#output = output;
  }

  get spec(): LocalFunctionSpec {
    return this.#spec;
  }

  async invoke(
    event: unknown,
    awsRequestId: string = randomUUID(),
    eventJson?: string,
  ): Promise<InvocationResult> {
    if (this.#stopped) throw new Error(`function ${this.#spec.name} is stopped`);
    // The worker gets the event as JSON text and parses it, as Lambda's runtime does: JSON.parse takes
    // any nesting, where a structured clone (or a re-stringify) stops a few thousand levels down.
    const json = eventJson ?? JSON.stringify(event ?? null);
    const started = this.#idle.pop() ?? (await this.#startWorker(awsRequestId));
    if (!(started instanceof Worker)) return { ok: false, error: started };
    const worker = started;
    const timeoutMs = this.#spec.timeoutSeconds * 1000;
    const deadline = Date.now() + timeoutMs;
    const { name: functionName, arn: functionArn, memoryMiB } = this.#spec;
    // The context's data crosses to the worker; its methods cannot, and the worker adds them.
    const context = Object.fromEntries(
      Object.entries(lambdaContext({ functionName, functionArn, awsRequestId, deadline, memoryMiB })).filter(
        ([, value]) => typeof value !== 'function',
      ),
    );
    worker.postMessage({ id: awsRequestId, eventJson: json, deadline, context });
    const outcome = await nextOutcome(worker, (message) => message.id === awsRequestId, timeoutMs);
    if (outcome.kind !== 'message') {
      await this.#discard(worker);
      const error =
        outcome.kind === 'timeout'
          ? timeoutError(awsRequestId, timeoutMs)
          : crashError(outcome, awsRequestId);
      return { ok: false, error };
    }
    this.#release(worker);
    const { payload, error } = outcome.message;
    return error ? { ok: false, error } : { ok: true, result: JSON.parse(payload ?? 'null') };
  }

  /**
   * What the function's workers have used so far (`npm run bench` reads it around its rounds: the
   * difference is the function's own CPU, without the emulators or the poller). A worker's CPU counts
   * up to its last answer: what a replaced one used after that (a timed-out invocation's) is lost.
   */
  usage(): FunctionUsage {
    return {
      cpuMs: this.#cpuMs,
      invocations: this.#invocations,
      heapUsedBytes: [...this.#heapOf.values()],
    };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#idle.length = 0;
    this.#heapOf.clear();
    await Promise.all([...this.#all].map((worker) => worker.terminate()));
    this.#all.clear();
  }

  /**
   * Starts a worker and waits for its handler module to load (the function's init phase). A
   * failed init is the invocation's error, as in Lambda, and the next invocation tries again.
   */
  async #startWorker(awsRequestId: string): Promise<Worker | FunctionError> {
    const spec = this.#spec;
    const worker = new Worker(WORKER, {
      // What Lambda's runtime sets beside the function's own variables.
      env: {
        ...spec.environment,
        AWS_LAMBDA_FUNCTION_NAME: spec.name,
        LAMBDA_TASK_ROOT: spec.codeDirectory,
        _HANDLER: spec.handler,
      },
      workerData: { codeDirectory: spec.codeDirectory, handler: spec.handler },
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
    // Listened to first, so that an answer's usage is counted before its invocation resolves.
    worker.on('message', (message: WorkerMessage) => this.#count(worker, message));
    // Always listened to, so that no error of the worker's can go unhandled in this process: one
    // outside an invocation (a stray timer's) ends this container, as it would in Lambda.
    worker.on('error', () => this.#forget(worker));
    worker.on('exit', () => this.#forget(worker));

    const outcome = await nextOutcome(worker, (message) => message.ready === true || !!message.initError);
    if (outcome.kind === 'message' && outcome.message.ready) return worker;
    await this.#discard(worker);
    if (outcome.kind === 'message' && outcome.message.initError) return outcome.message.initError;
    return crashError(outcome as Exclude<WorkerOutcome, { kind: 'message' | 'timeout' }>, awsRequestId);
  }

  /** A worker done with its invocation: warm for the next one, unless the runtime stopped meanwhile. */
  #release(worker: Worker): void {
    if (this.#stopped || !this.#all.has(worker)) void worker.terminate();
    else this.#idle.push(worker);
  }

  async #discard(worker: Worker): Promise<void> {
    this.#forget(worker);
    await worker.terminate();
  }

  /** Adds what the worker used since its previous message (from its start, for its first). */
  #count(worker: Worker, message: WorkerMessage): void {
    // Every message of function-worker.mjs's carries its heap; anything else is none of its answers.
    if (message.heapUsedBytes === undefined) return;
    if (message.id !== undefined) this.#invocations++;
    if (this.#all.has(worker)) this.#heapOf.set(worker, message.heapUsedBytes);
    // One worker without a figure (no /proc) leaves none for the function.
    if (message.cpuMs === undefined || this.#cpuMs === undefined) {
      this.#cpuMs = undefined;
      return;
    }
    this.#cpuMs += message.cpuMs - (this.#cpuMsOf.get(worker) ?? 0);
    this.#cpuMsOf.set(worker, message.cpuMs);
  }

  #forget(worker: Worker): void {
    this.#heapOf.delete(worker);
    this.#all.delete(worker);
    const index = this.#idle.indexOf(worker);
    if (index >= 0) this.#idle.splice(index, 1);
  }
}

/** Waits for the worker's next accepted message, uncaught error or exit, or for `timeoutMs`. */
function nextOutcome(
  worker: Worker,
  accept: (message: WorkerMessage) => boolean,
  timeoutMs?: number,
): Promise<WorkerOutcome> {
  return new Promise((resolve) => {
    const timer =
      timeoutMs === undefined ? undefined : setTimeout(() => done({ kind: 'timeout' }), timeoutMs);
    const onMessage = (message: WorkerMessage) => {
      if (accept(message)) done({ kind: 'message', message });
    };
    const onError = (error: unknown) => done({ kind: 'error', error });
    const onExit = (code: number) => done({ kind: 'exit', code });
    const done = (outcome: WorkerOutcome) => {
      clearTimeout(timer);
      worker.off('message', onMessage).off('error', onError).off('exit', onExit);
      resolve(outcome);
    };
    worker.on('message', onMessage).on('error', onError).on('exit', onExit);
  });
}

/** How Lambda reports a container that failed outside the handler's own promise. */
function crashError(
  outcome: Extract<WorkerOutcome, { kind: 'error' | 'exit' }>,
  awsRequestId: string,
): FunctionError {
  if (outcome.kind === 'error') return functionError(outcome.error);
  const reason =
    outcome.code === 0
      ? 'Runtime exited without providing a reason'
      : `Runtime exited with error: exit status ${outcome.code}`;
  return { errorType: 'Runtime.ExitError', errorMessage: `RequestId: ${awsRequestId} Error: ${reason}` };
}
