import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { EnvironmentSlots } from './environment-slots.js';
import { type Container, startContainer } from './function-process.js';
import {
  type FunctionError,
  functionError,
  type InvocationResult,
  type LocalInvoker,
  lambdaContext,
  timeoutError,
} from './lambda-context.js';
import { type NodeBinary, nodeBinaryFor } from './node-binary.js';

export interface LocalFunctionSpec {
  name: string;
  arn: string;
  /** The function's code, as Lambda unpacks it into its task root: plain JavaScript, e.g. a bundled asset. */
  codeDirectory: string;
  /** Lambda's `Handler`: `[dir/]module.export`, the module a `.js`, `.mjs` or `.cjs` file of `codeDirectory`. */
  handler: string;
  /**
   * Lambda's `Runtime`, `nodejs24.x` by default: the Node.js major the function runs on (see
   * node-binary.ts) and its runtime's handler semantics (function-worker.mjs).
   */
  runtime?: string;
  timeoutSeconds: number;
  memoryMiB?: number;
  /** The function's environment, resolved to local resources. */
  environment: Record<string, string>;
  /**
   * Lambda Managed Instances' `PerExecutionEnvironmentMaxConcurrency` (a function placed on a
   * capacity provider): when set, up to this many invocations run at once in one container, as
   * function-worker.mjs's managed mode runs them (DESIGN §8), instead of one at a time. Such a
   * container is never frozen (it runs continuously), and an invocation past its timeout is answered
   * `Sandbox.Timedout` but neither stopped nor its container killed: Lambda Managed Instances do not
   * enforce the timeout (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-execution-environment.html).
   * @default undefined: one invocation at a time per container (Lambda's default compute)
   */
  perExecutionEnvironmentMaxConcurrency?: number;
}

export interface LocalFunctionOptions {
  /**
   * Freezes each container between invocations (SIGSTOP once it answered, SIGCONT for its next
   * invocation), as Lambda freezes an execution environment: what the handler left running (an
   * un-awaited promise, a timer, a write) does not go on after its answer, but resumes with the
   * next invocation, if any. On by default, as on Lambda.
   */
  freeze?: boolean;
  /** Where the Node.js binary of the function's runtime is looked for; the current directory by default. */
  projectDirectory?: string;
}

/** Receives each line a function writes (its logs and EMF metrics); without it they go to this process's output. */
export type FunctionOutput = (line: string, functionName: string) => void;

/**
 * Lambda's cap on a synchronous invocation's response, in bytes: 6 MB, counted as its error message
 * says (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
 */
const MAX_RESPONSE_BYTES = 6_291_556;

/**
 * What a container sends: its init's outcome, an invocation's (the result as JSON text, or the
 * error), each with what it has used so far, or the error that is ending it.
 */
interface ContainerMessage {
  ready?: true;
  initError?: FunctionError;
  id?: string;
  payload?: string;
  error?: FunctionError;
  /** An uncaught error or unhandled rejection: the container exits next. */
  crash?: FunctionError;
  /** The container's main thread's CPU time since it started, in ms; absent without Linux's /proc. */
  cpuMs?: number;
  /** The container's whole process's CPU time since it started (all its threads), in ms. */
  processCpuMs?: number;
  /** Its V8 heap in use, in bytes. */
  heapUsedBytes?: number;
  /** The part of it in V8's old generation, in bytes. */
  oldHeapUsedBytes?: number;
}

/** What a function's containers have used, as {@link LocalFunctionRuntime.usage} reports it. */
export interface FunctionUsage {
  /**
   * The CPU time of the main threads of the function's containers in ms (each from its start, its
   * init included, up to its last answer), those since replaced or stopped included; `undefined`
   * without Linux's /proc. Only the main threads: not V8's helper threads (its GC's among them).
   */
  cpuMs: number | undefined;
  /** The invocations its containers answered, with a result or a function error. */
  invocations: number;
  /** The V8 heap in use of each running container as of its last answer, in bytes. */
  heapUsedBytes: number[];
  /**
   * The part of each one's in V8's old generation, in bytes: what a leak grows, without the young
   * generation's garbage, whose size swings by tens of MiB between collections on Node 22 and later.
   */
  oldHeapUsedBytes: number[];
}

/** What a container did next: answered, crashed, ended, or nothing in time. */
type ContainerOutcome =
  | { kind: 'message'; message: ContainerMessage }
  | { kind: 'crash'; error: FunctionError }
  | { kind: 'exit'; code: number | null }
  | { kind: 'timeout' };

/** Every container of this process still alive: killed, and its /tmp removed, if this process exits. */
const live = new Map<ChildProcess, Container>();
process.on('exit', () => {
  for (const [child, container] of live) {
    child.kill('SIGKILL');
    container.cleanUp();
  }
});

/**
 * Runs one Lambda function locally. Each invocation gets a container of its own — a child process
 * on the Node.js major the function's runtime names (node-binary.ts), started as function-process.ts
 * says — reused once it is free (a warm container), and frozen in between: one invocation at a time
 * per container, as in Lambda — or, for a function on a capacity provider, up to its
 * `perExecutionEnvironmentMaxConcurrency` at once, never frozen, as Lambda Managed Instances run it
 * (there a timeout kills nothing). Whatever goes wrong inside the function is answered as Lambda
 * answers it, with a function error. A thrown error (a stack overflow too), a result that is not
 * JSON or too large leave the container warm; these replace it with a fresh one: a handler module
 * that fails to load (its init error, e.g. `Runtime.ImportModuleError`), an uncaught error or
 * unhandled rejection (`Runtime.UnhandledPromiseRejection`), an exit (`Runtime.ExitError`), and an
 * invocation past its timeout (`Sandbox.Timedout`).
 */
export class LocalFunctionRuntime implements LocalInvoker {
  readonly #spec: LocalFunctionSpec;
  readonly #idle: ChildProcess[] = [];
  readonly #all = new Map<ChildProcess, Container>();
  #stopped = false;
  /** The CPU time each container reported last, and its heap; a container leaves the heap map when it ends. */
  readonly #cpuMsOf = new WeakMap<ChildProcess, number>();
  readonly #heapOf = new Map<ChildProcess, { used: number; old: number }>();
  #cpuMs: number | undefined = 0;
  readonly #processCpuMsOf = new WeakMap<ChildProcess, number>();
  #processCpuMs = 0;
  #invocations = 0;
  readonly #output: FunctionOutput | undefined;
  readonly #freeze: boolean;
  readonly #node: NodeBinary;
  /** Managed mode's containers, each with its invocations in flight (none in the default mode). */
  readonly #slots: EnvironmentSlots<ChildProcess | FunctionError> | undefined;
  /** What each managed container's slots know it by. */
  readonly #environmentOf = new Map<ChildProcess, Promise<ChildProcess | FunctionError>>();

  constructor(spec: LocalFunctionSpec, output?: FunctionOutput, options: LocalFunctionOptions = {}) {
    this.#spec = spec;
    this.#output = output;
    this.#freeze = options.freeze ?? true;
    this.#node = nodeBinaryFor(this.#runtime, options.projectDirectory);
    const perEnvironment = spec.perExecutionEnvironmentMaxConcurrency;
    if (perEnvironment !== undefined && !(Number.isInteger(perEnvironment) && perEnvironment >= 1)) {
      throw new RangeError(
        `${spec.name}: perExecutionEnvironmentMaxConcurrency must be a positive integer, not ${perEnvironment}`,
      );
    }
    this.#slots =
      perEnvironment === undefined
        ? undefined
        : new EnvironmentSlots(perEnvironment, () => this.#startManagedContainer());
  }

  get spec(): LocalFunctionSpec {
    return this.#spec;
  }

  /** The Node.js binary the function's containers run on, and whether its major is the runtime's. */
  get node(): NodeBinary {
    return this.#node;
  }

  get #runtime(): string {
    return this.#spec.runtime ?? 'nodejs24.x';
  }

  async invoke(
    event: unknown,
    awsRequestId: string = randomUUID(),
    eventJson?: string,
  ): Promise<InvocationResult> {
    if (this.#stopped) throw new Error(`function ${this.#spec.name} is stopped`);
    // The container gets the event as JSON text and parses it, as Lambda's runtime does: JSON.parse
    // takes any nesting, where a structured clone (or a re-stringify) stops a few thousand levels down.
    const json = eventJson ?? JSON.stringify(event ?? null);
    if (this.#slots) return this.#invokeManaged(this.#slots, json, awsRequestId);
    const idle = this.#idle.pop();
    if (idle) idle.kill('SIGCONT');
    const started = idle ?? (await this.#startContainer(awsRequestId));
    if (!isChild(started)) return { ok: false, error: started };
    const child = started;
    const timeoutMs = this.#send(child, json, awsRequestId);
    const outcome = await nextOutcome(child, (message) => message.id === awsRequestId, timeoutMs);
    if (outcome.kind !== 'message') {
      await this.#discard(child);
      const error =
        outcome.kind === 'timeout'
          ? timeoutError(awsRequestId, timeoutMs)
          : crashError(outcome, awsRequestId);
      return { ok: false, error };
    }
    this.#release(child);
    return answerOf(outcome.message);
  }

  /**
   * Managed mode: the invocation goes into a container running fewer than the maximum, alongside
   * the others there. One past its timeout is answered so, but goes on (and keeps its slot) until
   * it ends; the container is replaced only when it crashes or exits, which fails every invocation
   * it was running.
   */
  async #invokeManaged(
    slots: EnvironmentSlots<ChildProcess | FunctionError>,
    json: string,
    awsRequestId: string,
  ): Promise<InvocationResult> {
    const slot = slots.take();
    const started = await slot.environment;
    if (!isChild(started)) {
      // Every invocation waiting on it gets its init error; the next one starts another container.
      slot.release();
      slots.remove(slot.environment);
      return { ok: false, error: started };
    }
    const child = started;
    const timeoutMs = this.#send(child, json, awsRequestId);
    const own = (message: ContainerMessage) => message.id === awsRequestId;
    const outcome = await nextOutcome(child, own, timeoutMs);
    if (outcome.kind === 'timeout') {
      void nextOutcome(child, own).then(slot.release);
      return { ok: false, error: timeoutError(awsRequestId, timeoutMs) };
    }
    slot.release();
    if (outcome.kind !== 'message') {
      await this.#discard(child);
      return { ok: false, error: crashError(outcome, awsRequestId) };
    }
    return answerOf(outcome.message);
  }

  /** Starts a managed container; one that fails its init is discarded, and its error given instead. */
  #startManagedContainer(): Promise<ChildProcess | FunctionError> {
    const environment = this.#startContainer(randomUUID()).then((started) => {
      if (isChild(started)) this.#environmentOf.set(started, environment);
      return started;
    });
    return environment;
  }

  /** Sends the invocation to its container with a context counting down from now; returns its timeout in ms. */
  #send(child: ChildProcess, json: string, awsRequestId: string): number {
    const timeoutMs = this.#spec.timeoutSeconds * 1000;
    const deadline = Date.now() + timeoutMs;
    const { name: functionName, arn: functionArn, memoryMiB } = this.#spec;
    const logStreamName = this.#all.get(child)?.logStreamName;
    // The context's data crosses to the container; its methods cannot, and the container adds them.
    const context = Object.fromEntries(
      Object.entries(
        lambdaContext({ functionName, functionArn, awsRequestId, deadline, memoryMiB, logStreamName }),
      ).filter(([, value]) => typeof value !== 'function'),
    );
    delete context.callbackWaitsForEmptyEventLoop;
    child.send({ id: awsRequestId, eventJson: json, deadline, context });
    return timeoutMs;
  }

  /**
   * What the function's containers have used so far (`npm run bench` reads it around its rounds: the
   * difference is the function's own CPU, without the emulators or the poller). A container's CPU
   * counts up to its last answer: what a replaced one used after that (a timed-out invocation's) is lost.
   */
  usage(): FunctionUsage {
    return {
      cpuMs: this.#cpuMs,
      invocations: this.#invocations,
      heapUsedBytes: [...this.#heapOf.values()].map((heap) => heap.used),
      oldHeapUsedBytes: [...this.#heapOf.values()].map((heap) => heap.old),
    };
  }

  /**
   * The CPU time of the function's containers as whole processes so far, in ms: every thread of each
   * (its main thread, V8's helper threads — its concurrent GC's among them — and libuv's), as
   * `process.cpuUsage()` counts it in the container, from its start (its init included) up to its
   * latest answer; those since replaced or stopped included. What a container used after an answer
   * (before it froze) counts with its next one. {@link usage}'s `cpuMs` is the main threads' alone;
   * this one needs no /proc. `npm run bench` adds it to its own process's CPU for the whole pipeline's.
   */
  processCpuMs(): number {
    return this.#processCpuMs;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#idle.length = 0;
    this.#slots?.clear();
    this.#heapOf.clear();
    await Promise.all([...this.#all.keys()].map((child) => this.#discard(child)));
  }

  /**
   * Starts a container and waits for its handler module to load (the function's init phase). A
   * failed init is the invocation's error, as in Lambda, and the next invocation tries again.
   */
  async #startContainer(awsRequestId: string): Promise<ChildProcess | FunctionError> {
    const spec = this.#spec;
    const region = spec.arn.split(':')[3] || 'us-east-1';
    const container = startContainer({
      name: spec.name,
      runtime: this.#runtime,
      codeDirectory: spec.codeDirectory,
      handler: spec.handler,
      memoryMiB: spec.memoryMiB ?? 128,
      ...(spec.perExecutionEnvironmentMaxConcurrency !== undefined && {
        maxConcurrency: spec.perExecutionEnvironmentMaxConcurrency,
      }),
      region,
      environment: spec.environment,
      node: this.#node,
      pipeOutput: this.#output !== undefined,
    });
    const { child } = container;
    live.set(child, container);
    this.#all.set(child, container);
    if (this.#output) {
      const output = this.#output;
      for (const stream of [child.stdout, child.stderr]) {
        if (stream) createInterface({ input: stream }).on('line', (line) => output(line, spec.name));
      }
    }
    // Listened to first, so that an answer's usage is counted before its invocation resolves.
    child.on('message', (message: ContainerMessage) => this.#count(child, message));
    // A container that ends (a stray timer's error outside an invocation too) is warm no more.
    child.on('error', () => this.#forget(child));
    child.on('close', () => {
      this.#forget(child);
      live.delete(child);
      container.cleanUp();
    });

    const outcome = await nextOutcome(child, (message) => message.ready === true || !!message.initError);
    if (outcome.kind === 'message' && outcome.message.ready) return child;
    await this.#discard(child);
    if (outcome.kind === 'message' && outcome.message.initError) return outcome.message.initError;
    return crashError(outcome as Exclude<ContainerOutcome, { kind: 'message' | 'timeout' }>, awsRequestId);
  }

  /** A container done with its invocation: frozen and warm for the next one, unless the runtime stopped meanwhile. */
  #release(child: ChildProcess): void {
    if (this.#stopped || !this.#all.has(child)) {
      void this.#discard(child);
      return;
    }
    if (this.#freeze) child.kill('SIGSTOP');
    this.#idle.push(child);
  }

  /** Kills a container (SIGKILL ends a frozen one too) and waits until it is gone. */
  async #discard(child: ChildProcess): Promise<void> {
    this.#forget(child);
    if (child.exitCode === null && child.signalCode === null) {
      const closed = new Promise((resolve) => child.once('close', resolve));
      child.kill('SIGKILL');
      await closed;
    }
  }

  /** Adds what the container used since its previous message (from its start, for its first). */
  #count(child: ChildProcess, message: ContainerMessage): void {
    // Every message of function-worker.mjs's but a crash carries its heap.
    if (message.heapUsedBytes === undefined) return;
    if (message.id !== undefined) this.#invocations++;
    if (this.#all.has(child)) {
      const old = message.oldHeapUsedBytes ?? message.heapUsedBytes;
      this.#heapOf.set(child, { used: message.heapUsedBytes, old });
    }
    if (message.processCpuMs !== undefined) {
      this.#processCpuMs += message.processCpuMs - (this.#processCpuMsOf.get(child) ?? 0);
      this.#processCpuMsOf.set(child, message.processCpuMs);
    }
    // One container without a figure (no /proc) leaves none for the function.
    if (message.cpuMs === undefined || this.#cpuMs === undefined) {
      this.#cpuMs = undefined;
      return;
    }
    this.#cpuMs += message.cpuMs - (this.#cpuMsOf.get(child) ?? 0);
    this.#cpuMsOf.set(child, message.cpuMs);
  }

  #forget(child: ChildProcess): void {
    const environment = this.#environmentOf.get(child);
    if (environment) this.#slots?.remove(environment);
    this.#environmentOf.delete(child);
    this.#heapOf.delete(child);
    this.#all.delete(child);
    const index = this.#idle.indexOf(child);
    if (index >= 0) this.#idle.splice(index, 1);
  }
}

/** An invocation's answer as Lambda gives it: its error, or its result if within Lambda's size cap. */
function answerOf({ payload, error }: ContainerMessage): InvocationResult {
  if (error) return { ok: false, error };
  if (Buffer.byteLength(payload ?? 'null') > MAX_RESPONSE_BYTES) {
    const errorMessage = `Response payload size exceeded maximum allowed payload size (${MAX_RESPONSE_BYTES} bytes).`;
    return { ok: false, error: { errorType: 'Function.ResponseSizeTooLarge', errorMessage } };
  }
  return { ok: true, result: JSON.parse(payload ?? 'null') };
}

function isChild(value: ChildProcess | FunctionError): value is ChildProcess {
  return 'pid' in value;
}

/**
 * Waits for the container's next accepted message, its crash or its end (`close`: after its last
 * message, so that a crash is told before the exit it leads to), or for `timeoutMs`.
 */
function nextOutcome(
  child: ChildProcess,
  accept: (message: ContainerMessage) => boolean,
  timeoutMs?: number,
): Promise<ContainerOutcome> {
  return new Promise((resolve) => {
    const timer =
      timeoutMs === undefined ? undefined : setTimeout(() => done({ kind: 'timeout' }), timeoutMs);
    const onMessage = (message: ContainerMessage) => {
      if (message.crash) done({ kind: 'crash', error: message.crash });
      else if (accept(message)) done({ kind: 'message', message });
    };
    const onError = (error: unknown) => done({ kind: 'crash', error: functionError(error) });
    const onClose = (code: number | null) => done({ kind: 'exit', code });
    const done = (outcome: ContainerOutcome) => {
      clearTimeout(timer);
      child.off('message', onMessage).off('error', onError).off('close', onClose);
      resolve(outcome);
    };
    child.on('message', onMessage).on('error', onError).on('close', onClose);
  });
}

/** How Lambda reports a container that failed outside the handler's own promise. */
function crashError(
  outcome: Extract<ContainerOutcome, { kind: 'crash' | 'exit' }>,
  awsRequestId: string,
): FunctionError {
  if (outcome.kind === 'crash') return outcome.error;
  const reason =
    outcome.code === 0
      ? 'Runtime exited without providing a reason'
      : `Runtime exited with error: ${outcome.code === null ? 'signal' : `exit status ${outcome.code}`}`;
  return { errorType: 'Runtime.ExitError', errorMessage: `RequestId: ${awsRequestId} Error: ${reason}` };
}
