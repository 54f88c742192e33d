import { parseArgs } from 'node:util';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import { recordId } from '../lambdas/idempotency/keys.js';

export const USAGE = `Usage:
  oncely local [--app-dir DIR] [--ready-file PATH] [--env NAME=VALUE]... [--context KEY=VALUE]...
               [--schedule-interval SECONDS] [--async-retry-delay SECONDS] [--one-group-per-receive]
               [--duplicate-deliveries] [--install-node] [--traces-file PATH | --no-traces]
      Run your CDK app locally until Ctrl-C: synthesise it from its cdk.json (in DIR, or here) as
      \`cdk deploy\` would, then its queues and tables in the SQS emulator and DynamoDB Local, each
      function from its bundled asset, its event sources and schedules, behind one edge endpoint
      (AWS_ENDPOINT_URL). --env sets a variable on every function; --context is CDK context for the
      synth; --ready-file receives the endpoints, resource names and stack outputs once ready;
      --schedule-interval runs every schedule (the outbox sweeper, the monitor) that often instead;
      --async-retry-delay retries a failed scheduled run or Event invocation after that long, not
      Lambda's 1 and 2 minutes.
      --one-group-per-receive makes each FIFO receive return one message group's messages only;
      --duplicate-deliveries gives each batch of a standard queue to two invocations at once, then
      once more, as SQS's at-least-once delivery may;
      --install-node installs the Node.js major a function's runtime names into .oncely/ when missing
      (once, from the npm registry), rather than running it on this machine's Node.
      Traces: with OpenTelemetry's SDK installed, each function exports its spans, as the ADOT layer
      would, to the sandbox's OTLP/HTTP JSON collector, which writes them to --traces-file (default
      .oncely/traces.otlp.jsonl in the app's directory, emptied at start; the ready file says where);
      --no-traces turns that off.

  oncely dlq list      [--limit N] [--timeout SECONDS] [--ready-file PATH | --stack NAME] [--json]
      Show the messages in the DLQ (without consuming them) and why they are there: at most --limit
      (default 500), bodies cut to 60 characters in the table, whole in --json. Waits at most
      --timeout seconds (default 60) for messages in flight elsewhere. Exit code 3 when the listing
      is partial (a long group, the limit, messages in flight elsewhere).
  oncely dlq redrive   [--dry-run] [--group ID] [--key KEY] [--limit N] [--yes] [--timeout SECONDS]
                       [--ready-file PATH | --stack NAME] [--json]
      Move the DLQ's messages back to the queue, each group in order; leave those past the dedup
      horizon in place. --dry-run moves nothing and counts; --group, --key: only that group's
      messages, that key's message; --limit moves at most N. Asks before moving more than 10 unless
      --yes (without a terminal it refuses: exit code 4). Stops after --timeout seconds (default 300).
      Exit code 0 when the DLQ holds nothing it should move, 3 when messages are left (the output
      says which and why): run it again. Ctrl-C gives its lease back: exit code 130.
  oncely dlq discard   MESSAGE_ID... --reason TEXT [--timeout SECONDS] [--ready-file PATH | --stack NAME]
                       [--json]
      Delete these messages from the DLQ for good, each recorded first in the idempotency table
      (oncely/discarded#MESSAGE_ID, with its body and the reason). Waits up to --timeout seconds
      (default 60) for messages in flight elsewhere. Exit code 3 if one was not found (one
      discarded before is found: by its record).
  oncely in-doubt list [--limit N] [--after TOKEN] [--ready-file PATH | --stack NAME [--valkey-endpoint HOST:PORT]]
                       [--json]
      Show the records to resolve, oldest first: IN_DOUBT (effects that may or may not have
      happened) and RETRY_PENDING (a \`resolve --as retry\` that did not finish). At most --limit
      (default 100); when more follow it prints a token, and --after TOKEN shows the next page.
      Exit code 3 when more follow.
  oncely in-doubt resolve ID --as completed|retry [--republish] [--yes]
                       [--ready-file PATH | --stack NAME [--valkey-endpoint HOST:PORT]] [--json]
      ID as \`in-doubt list\` shows it (namespace#key). --as completed: it happened, never run it;
      --as retry: it did not happen, send the message again so that the consumer runs it (run it
      again to finish a retry listed as RETRY_PENDING). A message published past the dedup horizon
      is refused; --republish sends it stamped now, under the same key (default: as it was kept).
      Shows the record and asks before acting; --yes acts without asking (default: ask, and
      without a terminal to ask on, do nothing and exit 4).
  oncely outbox list   [--stuck | --older-than SECONDS] [--output-prefix PREFIX]
                       [--ready-file PATH | --stack NAME] [--json]
      Show the outbox's pending messages, oldest first: age, attempts, last error, who sends them.
      --stuck: only those pending longer than the outbox's stuck bound; --older-than: than SECONDS.
      --output-prefix picks the outbox by its outputPrefix when the target has several.
  oncely console [--port PORT] [--allow-actions] [--output-prefix PREFIX]
                 [--ready-file PATH | --stack NAME [--valkey-endpoint HOST:PORT]]
      Serve the console on 127.0.0.1 (--port, default: a free one) until Ctrl-C: the queues, the
      records to resolve and the outbox, updated every 2 s; the latest messages and a message's
      story (from the spans, in a sandbox that collects them); the DLQ. On a sandbox it also acts
      (redrive, discard, resolve: each asks first; publish), with the token in the address it
      prints; on a stack it only reads unless --allow-actions. \`oncely local\` serves it too.
  oncely history KEY --namespace NS [--namespace NS]...
                       [--ready-file PATH | --stack NAME [--valkey-endpoint HOST:PORT]] [--json]
  oncely history NS#KEY [--ready-file PATH | --stack NAME [--valkey-endpoint HOST:PORT]] [--json]
      Tell what happened to one message, in time order: its publish, its outbox item and send, each
      delivery with its lease, each outcome and error, dead-lettering, redrives, an operator's
      resolutions, and in the sandbox its spans; then what you can do next. NS is the namespace of
      the operation that handles it (its record id is NS#KEY); give several to follow it through
      several operations. Reads by key only.

  These operate a running pipeline: the local sandbox (its ready file) or a deployed stack (by
  name, with your usual AWS credentials). ONCELY_READY_FILE or ONCELY_STACK_NAME may stand in.
  --output-prefix PREFIX picks the pipeline whose outputs carry that prefix (its outputPrefix)
  when the target has several; default: the one without a prefix.
  --valkey-endpoint HOST:PORT: a stack whose lease records are in Valkey (leaseRecords: 'valkey')
  keeps them in a cache inside its VPC, which in-doubt, history and console read through a tunnel
  listening at HOST:PORT (default: none, and those refuse to run; docs/operations.md). TLS checks
  the cache's own name; you connect as its user with an IAM token of your credentials. A sandbox's
  ready file says where its cache is.
  --json prints the result as JSON.`;

/** The command line is wrong; the message says how. */
export class CliUsageError extends OncelyError {
  static override readonly errorName: string = 'CliUsageError';
  readonly retryable = false;
}

/**
 * Where an operations command finds the pipeline; `outputPrefix` picks one of several by its
 * outputs' prefix (the construct's `outputPrefix`): the unprefixed one by default.
 */
export type Target = (
  | { kind: 'sandbox'; readyFile: string }
  | {
      kind: 'stack';
      stackName: string;
      /**
       * `--valkey-endpoint`: where the stack's lease records cache is reached from here (a tunnel),
       * as `host:port`; TLS still checks the cache's own name.
       */
      valkeyEndpoint?: { host: string; port: number };
    }
) & {
  outputPrefix?: string;
};

export type Command =
  | { name: 'help' }
  | {
      name: 'local';
      options: {
        appDirectory?: string;
        environment: Record<string, string>;
        context: Record<string, string>;
        readyFile?: string;
        scheduleIntervalSeconds?: number;
        asyncRetryDelaySeconds?: number;
        oneGroupPerReceive: boolean;
        duplicateDeliveries: boolean;
        installNode: boolean;
        tracesFile?: string;
        noTraces: boolean;
      };
    }
  | { name: 'in-doubt-list'; target: Target; json: boolean; limit?: number; after?: string }
  | { name: 'dlq-list'; target: Target; json: boolean; limit?: number; timeoutSeconds?: number }
  | {
      name: 'dlq-redrive';
      target: Target;
      json: boolean;
      timeoutSeconds?: number;
      dryRun: boolean;
      groupId?: string;
      key?: string;
      limit?: number;
      /** Move more than a few without asking. */
      yes: boolean;
    }
  | {
      name: 'dlq-discard';
      target: Target;
      json: boolean;
      messageIds: string[];
      reason: string;
      timeoutSeconds?: number;
    }
  | {
      name: 'in-doubt-resolve';
      target: Target;
      json: boolean;
      id: string;
      as: 'completed' | 'retry';
      /** With `--as retry`: send the message stamped with a fresh `publishedAt`. */
      republish: boolean;
      /** Act without showing the record and asking first. */
      yes: boolean;
    }
  | {
      name: 'console';
      target: Target;
      json: boolean;
      port?: number;
      /** Let the page act on a stack (a sandbox's always may). */
      allowActions: boolean;
    }
  | {
      name: 'history';
      target: Target;
      json: boolean;
      key: string;
      /** `namespace#key`: the records to read. */
      recordIds: string[];
    }
  | {
      name: 'outbox-list';
      target: Target;
      json: boolean;
      /** Only messages pending longer than the outbox's stuck bound (its `OutboxStuckAfterSeconds` output). */
      stuck: boolean;
      /** Only messages pending longer than this. */
      olderThanSeconds?: number;
    };

/** A command that operates a running pipeline and ends (`console` serves until stopped). */
export type OperationsCommand = Exclude<Extract<Command, { target: Target }>, { name: 'console' }>;

export function parseCommandLine(argv: string[], env: NodeJS.ProcessEnv = process.env): Command {
  const { values, positionals } = parse(argv);
  const [group, action, ...rest] = positionals;
  if (values.help || group === undefined || group === 'help') return { name: 'help' };
  if (group === 'local') {
    expectNoMore([action, ...rest].filter((word) => word !== undefined));
    return {
      name: 'local',
      options: {
        appDirectory: values['app-dir'],
        environment: pairs(values.env ?? [], '--env'),
        context: pairs(values.context ?? [], '--context'),
        readyFile: values['ready-file'],
        scheduleIntervalSeconds: seconds(values['schedule-interval'], '--schedule-interval'),
        asyncRetryDelaySeconds: seconds(values['async-retry-delay'], '--async-retry-delay'),
        oneGroupPerReceive: values['one-group-per-receive'] ?? false,
        duplicateDeliveries: values['duplicate-deliveries'] ?? false,
        installNode: values['install-node'] ?? false,
        tracesFile: values['traces-file'],
        noTraces: values['no-traces'] ?? false,
      },
    };
  }
  const target = targetOf(values, env);
  const json = values.json ?? false;
  if (group === 'dlq' && action === 'list') {
    expectNoMore(rest);
    return {
      name: 'dlq-list',
      target,
      json,
      limit: howMany(values.limit),
      timeoutSeconds: seconds(values.timeout, '--timeout'),
    };
  }
  if (group === 'dlq' && action === 'redrive') {
    expectNoMore(rest);
    return {
      name: 'dlq-redrive',
      target,
      json,
      timeoutSeconds: seconds(values.timeout, '--timeout'),
      dryRun: values['dry-run'] ?? false,
      groupId: values.group,
      key: values.key,
      limit: howMany(values.limit),
      yes: values.yes ?? false,
    };
  }
  if (group === 'dlq' && action === 'discard') {
    if (rest.length === 0)
      throw new CliUsageError('dlq discard needs the ids of the messages, as `dlq list` shows them.');
    if (!values.reason)
      throw new CliUsageError('dlq discard needs --reason TEXT: it is kept with each message.');
    return {
      name: 'dlq-discard',
      target,
      json,
      messageIds: rest,
      reason: values.reason,
      timeoutSeconds: seconds(values.timeout, '--timeout'),
    };
  }
  if (group === 'in-doubt' && action === 'list') {
    expectNoMore(rest);
    return { name: 'in-doubt-list', target, json, limit: howMany(values.limit), after: values.after };
  }
  if (group === 'in-doubt' && action === 'resolve') {
    const [id, ...extra] = rest;
    if (!id)
      throw new CliUsageError('in-doubt resolve needs the record id, e.g. notifications#order-7-mail.');
    expectNoMore(extra);
    if (values.as !== 'completed' && values.as !== 'retry') {
      throw new CliUsageError(
        'in-doubt resolve needs --as completed (it happened) or --as retry (run it again).',
      );
    }
    const republish = values.republish ?? false;
    if (republish && values.as !== 'retry') throw new CliUsageError('--republish goes with --as retry only.');
    return { name: 'in-doubt-resolve', target, json, id, as: values.as, republish, yes: values.yes ?? false };
  }
  if (group === 'outbox' && action === 'list') {
    expectNoMore(rest);
    const stuck = values.stuck ?? false;
    const olderThanSeconds = seconds(values['older-than'], '--older-than');
    if (stuck && olderThanSeconds !== undefined) {
      throw new CliUsageError('Give --stuck or --older-than, not both.');
    }
    return {
      name: 'outbox-list',
      target,
      json,
      stuck,
      olderThanSeconds,
    };
  }
  if (group === 'console') {
    expectNoMore([action, ...rest].filter((word) => word !== undefined));
    return {
      name: 'console',
      target,
      json,
      port: portOf(values.port),
      allowActions: values['allow-actions'] ?? false,
    };
  }
  if (group === 'history') {
    if (!action) throw new CliUsageError(HISTORY_NEEDS);
    expectNoMore(rest);
    return { name: 'history', target, json, ...historyOf(action, values.namespace ?? []) };
  }
  throw new CliUsageError(`Unknown command: oncely ${positionals.join(' ')}`);
}

const HISTORY_NEEDS =
  'history needs the message key and the namespace of the operation that handles it: ' +
  '`oncely history KEY --namespace NS`, or the record id: `oncely history NS#KEY`.';

/**
 * The key and record ids of `oncely history`: KEY with its namespaces, or a record id (`NS#KEY`)
 * alone. A key may hold "#" itself: with --namespace, the whole word is the key.
 */
function historyOf(word: string, namespaces: string[]): { key: string; recordIds: string[] } {
  const at = word.indexOf('#');
  if (namespaces.length === 0 && at <= 0) throw new CliUsageError(HISTORY_NEEDS);
  const [key, asked] = namespaces.length > 0 ? [word, namespaces] : [word.slice(at + 1), [word.slice(0, at)]];
  try {
    return { key, recordIds: [...new Set(asked)].map((namespace) => recordId(namespace, key)) };
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        env: { type: 'string', multiple: true },
        context: { type: 'string', multiple: true },
        'ready-file': { type: 'string' },
        'app-dir': { type: 'string' },
        stack: { type: 'string' },
        as: { type: 'string' },
        after: { type: 'string' },
        republish: { type: 'boolean' },
        yes: { type: 'boolean' },
        timeout: { type: 'string' },
        limit: { type: 'string' },
        group: { type: 'string' },
        key: { type: 'string' },
        reason: { type: 'string' },
        'dry-run': { type: 'boolean' },
        stuck: { type: 'boolean' },
        'older-than': { type: 'string' },
        'output-prefix': { type: 'string' },
        'valkey-endpoint': { type: 'string' },
        namespace: { type: 'string', multiple: true },
        port: { type: 'string' },
        'allow-actions': { type: 'boolean' },
        'schedule-interval': { type: 'string' },
        'async-retry-delay': { type: 'string' },
        'one-group-per-receive': { type: 'boolean' },
        'duplicate-deliveries': { type: 'boolean' },
        'install-node': { type: 'boolean' },
        'traces-file': { type: 'string' },
        'no-traces': { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
}

function pairs(items: string[], flag: string): Record<string, string> {
  return Object.fromEntries(
    items.map((item) => {
      const at = item.indexOf('=');
      if (at <= 0) throw new CliUsageError(`${flag} takes NAME=VALUE, got "${item}".`);
      return [item.slice(0, at), item.slice(at + 1)];
    }),
  );
}

function howMany(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0) {
    throw new CliUsageError(`--limit takes a whole number above 0, got "${value}".`);
  }
  return number;
}

function portOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new CliUsageError(`--port takes a port number from 1 to 65535, got "${value}".`);
  }
  return port;
}

function seconds(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0) {
    throw new CliUsageError(`${flag} takes a whole number of seconds above 0, got "${value}".`);
  }
  return number;
}

function targetOf(
  values: { 'ready-file'?: string; stack?: string; 'output-prefix'?: string; 'valkey-endpoint'?: string },
  env: NodeJS.ProcessEnv,
): Target {
  if (values['ready-file'] && values.stack)
    throw new CliUsageError('Give --ready-file or --stack, not both.');
  const prefix = values['output-prefix'] === undefined ? {} : { outputPrefix: values['output-prefix'] };
  const readyFile = values['ready-file'] ?? (values.stack ? undefined : env.ONCELY_READY_FILE);
  const valkeyEndpoint = values['valkey-endpoint'];
  if (readyFile) {
    if (valkeyEndpoint !== undefined) {
      throw new CliUsageError(
        "--valkey-endpoint goes with --stack: the sandbox's ready file says where its cache is.",
      );
    }
    return { kind: 'sandbox', readyFile, ...prefix };
  }
  const stackName = values.stack ?? env.ONCELY_STACK_NAME;
  if (stackName) {
    const tunnel = valkeyEndpoint === undefined ? {} : { valkeyEndpoint: hostAndPort(valkeyEndpoint) };
    return { kind: 'stack', stackName, ...tunnel, ...prefix };
  }
  throw new CliUsageError(
    'Which pipeline? Give --ready-file PATH (a running `oncely local`) or --stack NAME (a deployed stack).',
  );
}

/** `--valkey-endpoint`'s `host:port` (an IPv6 host in brackets: `[::1]:6379`). */
function hostAndPort(value: string): { host: string; port: number } {
  const at = value.lastIndexOf(':');
  const host = value.slice(0, Math.max(at, 0)).replace(/^\[(.*)\]$/, '$1');
  const port = Number(value.slice(at + 1));
  if (at <= 0 || host === '' || !Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new CliUsageError(
      `--valkey-endpoint takes HOST:PORT, where your tunnel to the lease records cache listens (e.g. localhost:6379), got "${value}".`,
    );
  }
  return { host, port };
}

function expectNoMore(words: (string | undefined)[]): void {
  if (words.length > 0) throw new CliUsageError(`Unexpected argument: ${words.join(' ')}`);
}
