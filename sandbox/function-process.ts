import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NodeBinary } from './node-binary.js';

const WORKER = fileURLToPath(new URL('./function-worker.mjs', import.meta.url));

/** What one container of a function is started with. */
export interface ContainerOptions {
  name: string;
  /** The function's runtime, e.g. `nodejs24.x`. */
  runtime: string;
  codeDirectory: string;
  handler: string;
  memoryMiB: number;
  /**
   * Lambda Managed Instances' per-environment maximum: set, the container says so as Lambda's runtime
   * there does (`AWS_LAMBDA_MAX_CONCURRENCY`, which Powertools reads to scope its state per
   * invocation) and runs that many invocations at once (function-worker.mjs).
   */
  maxConcurrency?: number;
  region: string;
  /** The function's own variables (resolved locally), under Lambda's reserved ones. */
  environment: Record<string, string>;
  node: NodeBinary;
  /** Pipes the container's stdout and stderr to the caller, else they are this process's. */
  pipeOutput: boolean;
}

/** A started container: its process, its log stream, and a way to remove its private /tmp. */
export interface Container {
  child: ChildProcess;
  logStreamName: string;
  /** Removes its private temporary directory, once the process has ended. */
  cleanUp(): void;
}

/**
 * Starts one warm container of a function as a child process of this one (in its process group, so
 * that killing the group kills it), as Lambda starts an execution environment: its working directory
 * the task root, Lambda's reserved variables (see "Defined runtime environment variables",
 * https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime)
 * over the function's own, `TZ=:UTC`, and a `/tmp` of its own: a private temporary directory as
 * `TMPDIR`, bound over `/tmp` itself where Linux lets an unprivileged user and mount namespace do it.
 */
export function startContainer(options: ContainerOptions): Container {
  const privateTmp = mkdtempSync(join(tmpdir(), `oncely-fn-${options.name.slice(0, 40)}-`));
  const logStreamName = `${new Date().toISOString().slice(0, 10).replaceAll('-', '/')}/[$LATEST]${randomBytes(16).toString('hex')}`;
  const isolated = privateTmpWorks();
  const environment: Record<string, string> = {
    ...(process.env.PATH !== undefined && { PATH: process.env.PATH }),
    LANG: 'en_US.UTF-8',
    ...options.environment,
    // Reserved: the function's configuration cannot set them on Lambda.
    _HANDLER: options.handler,
    AWS_DEFAULT_REGION: options.region,
    AWS_REGION: options.region,
    AWS_EXECUTION_ENV: `AWS_Lambda_${options.runtime}`,
    AWS_LAMBDA_FUNCTION_NAME: options.name,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(options.memoryMiB),
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_INITIALIZATION_TYPE:
      options.maxConcurrency === undefined ? 'on-demand' : 'lambda-managed-instances',
    ...(options.maxConcurrency !== undefined && {
      AWS_LAMBDA_MAX_CONCURRENCY: String(options.maxConcurrency),
    }),
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${options.name}`,
    AWS_LAMBDA_LOG_STREAM_NAME: logStreamName,
    LAMBDA_TASK_ROOT: options.codeDirectory,
    TZ: ':UTC',
    TMPDIR: isolated ? '/tmp' : privateTmp,
  };
  const node = [
    options.node.path,
    ...disabledFeatures(options.node, options.environment.NODE_OPTIONS ?? ''),
    WORKER,
  ];
  const [command, ...args] = isolated
    ? isolatedCommand(
        privateTmp,
        options.codeDirectory,
        [options.codeDirectory, WORKER, options.node.path, ...filesNodeReadsAtStart(options.environment)],
        node,
      )
    : deathSignalWorks()
      ? ['setpriv', '--pdeathsig', 'KILL', '--', ...node]
      : node;
  const output = options.pipeOutput ? 'pipe' : 'inherit';
  const child = spawn(command as string, args, {
    cwd: options.codeDirectory,
    env: environment,
    stdio: ['ignore', output, output, 'ipc'],
  });
  return {
    child,
    logStreamName,
    cleanUp: () => rmSync(privateTmp, { recursive: true, force: true }),
  };
}

/**
 * The files the environment names for Node to read as it starts, before any code runs: the extra CA
 * certificates (`NODE_EXTRA_CA_CERTS`; the sandbox's serverless caches' certificate, or one of
 * `--env`), which a private `/tmp` would hide.
 */
function filesNodeReadsAtStart(environment: Record<string, string>): string[] {
  const file = environment.NODE_EXTRA_CA_CERTS;
  return file && existsSync(file) ? [file] : [];
}

/**
 * Runs `node` in a user and mount namespace of its own whose `/tmp` is `privateTmp`: what the
 * container needs from the real `/tmp` (its code, this runtime, the Node binary: the top-level
 * entries of /tmp that hold them) is bound into it first. `setpriv --pdeathsig KILL` kills the
 * container with this process, even while it is frozen (a stopped process hears no disconnect).
 */
function isolatedCommand(
  privateTmp: string,
  workingDirectory: string,
  needed: string[],
  node: string[],
): string[] {
  const realTmp = realpathSync('/tmp');
  const kept = new Set(
    needed
      .map((path) => relative(realTmp, realpathSync(path)))
      .filter((path) => path !== '' && !path.startsWith('..'))
      .map((path) => path.split(sep)[0] as string),
  );
  const script =
    'private=$1; cwd=$2; shift 2; ' +
    'while [ "$1" != -- ]; do mkdir -p "$private/$1" && mount --rbind "/tmp/$1" "$private/$1" || exit 97; shift; done; shift; ' +
    'mount --rbind "$private" /tmp && cd "$cwd" && exec setpriv --pdeathsig KILL -- "$@"';
  return [
    'unshare',
    '--user',
    '--map-root-user',
    '--mount',
    '--',
    '/bin/sh',
    '-c',
    script,
    'sh',
    privateTmp,
    workingDirectory,
    ...kept,
    '--',
    ...node,
  ];
}

/**
 * The flags by which Lambda disables Node's experimental features on the runtime of the binary's
 * major, unless `NODE_OPTIONS` re-enables them (see "Building Lambda functions with Node.js",
 * https://docs.aws.amazon.com/lambda/latest/dg/lambda-nodejs.html): `require()` of ES modules on
 * Node 20 and 22, module-type detection on 22. None on a binary of another major than the runtime's.
 */
function disabledFeatures(node: NodeBinary, nodeOptions: string): string[] {
  if (!node.matches) return [];
  const flags: Record<number, string[]> = {
    20: ['require-module'],
    22: ['require-module', 'detect-module'],
  };
  return (flags[node.wantedMajor ?? 0] ?? [])
    .filter((feature) => !nodeOptions.includes(`--experimental-${feature}`))
    .map((feature) => `--no-experimental-${feature}`);
}

let privateTmpSupport: boolean | undefined;

/**
 * Whether this machine lets an unprivileged user bind a directory over `/tmp` in a namespace of its
 * own (Linux with unprivileged user namespaces, util-linux's unshare and setpriv), asked once; where
 * it cannot, says so once, and each container gets a private `TMPDIR` only.
 */
export function privateTmpWorks(): boolean {
  if (privateTmpSupport === undefined) {
    const probe =
      process.platform === 'linux'
        ? spawnSync(
            'unshare',
            [
              '--user',
              '--map-root-user',
              '--mount',
              '--',
              'setpriv',
              '--pdeathsig',
              'KILL',
              '--',
              'mount',
              '--rbind',
              tmpdir(),
              '/tmp',
            ],
            { stdio: 'ignore' },
          )
        : undefined;
    privateTmpSupport = probe?.status === 0;
    if (!privateTmpSupport) {
      console.warn(
        'oncely local: functions share this machine’s /tmp (no unprivileged user+mount namespace here); each gets its own TMPDIR (os.tmpdir()) only.',
      );
    }
  }
  return privateTmpSupport;
}

let deathSignalSupport: boolean | undefined;

/**
 * Whether util-linux's `setpriv --pdeathsig` is here (Linux), asked once: with it a container is
 * killed with this process even while frozen; without it, a frozen container outlives this process
 * if it is killed (SIGKILL) rather than stopped: an unfrozen one exits once its IPC channel closes.
 */
export function deathSignalWorks(): boolean {
  deathSignalSupport ??=
    process.platform === 'linux' &&
    spawnSync('setpriv', ['--pdeathsig', 'KILL', '--', 'true'], { stdio: 'ignore' }).status === 0;
  return deathSignalSupport;
}
