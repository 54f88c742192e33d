import { OncelyError } from '../idempotency/errors.js';

/**
 * The environment variables `fifoBatch` falls back on for the options it is not given. The
 * OncelyPipeline construct (`oncely/cdk`) sets them on the consumer it deploys, and the sandbox
 * (`oncely local`) sets them too; Powertools reads its own (`POWERTOOLS_SERVICE_NAME`, …).
 */
export const CONSUMER_ENVIRONMENT = {
  /** The idempotency table, for the default `store`. */
  idempotencyTableName: 'IDEMPOTENCY_TABLE_NAME',
  /** Optional: the lifetime of an idempotency record in seconds; the store's default (30 days) when unset. */
  idempotencyTtlSeconds: 'IDEMPOTENCY_TTL_SECONDS',
  /** The FIFO DLQ's URL, for the default `deadLetterQueue`. */
  dlqUrl: 'DLQ_URL',
  /** Optional: the queue the consumer reads; a record sent to the DLQ is then deleted from it at once. */
  queueUrl: 'QUEUE_URL',
  /** Optional: how many message groups of a batch run at once; 10 when unset. */
  maxConcurrentGroups: 'MAX_CONCURRENT_GROUPS',
} as const;

export type ConsumerVariable = keyof typeof CONSUMER_ENVIRONMENT;

/** The consumer's environment, read and checked. */
export interface ConsumerEnvironment {
  idempotencyTableName: string;
  idempotencyTtlSeconds?: number;
  dlqUrl: string;
  queueUrl?: string;
  maxConcurrentGroups?: number;
}

/**
 * The consumer's environment is incomplete or invalid. It fails the whole batch: no record can be
 * processed without its table or its DLQ, and no retry can fix the function's configuration.
 */
export class ConsumerEnvironmentError extends OncelyError {
  static override readonly errorName: string = 'ConsumerEnvironmentError';
  readonly retryable = false;
  constructor(
    /** The variables that are missing or invalid. */
    readonly variables: readonly string[],
    problems: readonly string[],
  ) {
    super(
      `the consumer's environment is incomplete or invalid: ${problems.join('; ')}. The OncelyPipeline construct ` +
        '(oncely/cdk) sets these variables on the consumer it deploys, and `oncely local` in its sandbox; ' +
        'elsewhere, set them, or give fifoBatch the options they stand for (store, deadLetterQueue, maxConcurrentGroups).',
    );
  }
}

const ALL_VARIABLES = Object.keys(CONSUMER_ENVIRONMENT) as ConsumerVariable[];

/**
 * Reads and checks `variables` (all by default; `fifoBatch` reads only those its options leave to
 * the environment). The error names every variable that is missing or invalid, at once.
 */
export function readConsumerEnvironment<V extends ConsumerVariable = ConsumerVariable>(
  variables: readonly V[] = ALL_VARIABLES as V[],
  environment: Readonly<Record<string, string | undefined>> = process.env,
): Pick<ConsumerEnvironment, V> {
  const invalid: string[] = [];
  const problems: string[] = [];
  const problem = (name: string, text: string) => {
    invalid.push(name);
    problems.push(`${name} ${text}`);
  };
  const read = (variable: ConsumerVariable, required: boolean) => {
    const name = CONSUMER_ENVIRONMENT[variable];
    const value = environment[name];
    if (value === undefined || value === '') {
      if (required) problem(name, value === undefined ? 'is not set' : 'is empty');
      return undefined;
    }
    return { name, value };
  };
  const url = (variable: ConsumerVariable, required: boolean) => {
    const found = read(variable, required);
    if (!found) return undefined;
    if (!/^https?:\/\/[^/\s]+/.test(found.value)) {
      problem(found.name, `must be an http(s) URL, not ${JSON.stringify(found.value)}`);
    }
    return found.value;
  };
  const positiveInteger = (variable: ConsumerVariable) => {
    const found = read(variable, false);
    if (!found) return undefined;
    const number = Number(found.value);
    if (!/^\d+$/.test(found.value) || number < 1) {
      problem(found.name, `must be a positive whole number, not ${JSON.stringify(found.value)}`);
    }
    return number;
  };

  const readers: Record<ConsumerVariable, () => unknown> = {
    idempotencyTableName: () => read('idempotencyTableName', true)?.value,
    idempotencyTtlSeconds: () => positiveInteger('idempotencyTtlSeconds'),
    dlqUrl: () => url('dlqUrl', true),
    queueUrl: () => url('queueUrl', false),
    maxConcurrentGroups: () => positiveInteger('maxConcurrentGroups'),
  };
  const values = Object.fromEntries(variables.map((variable) => [variable, readers[variable]()]));
  if (problems.length > 0) throw new ConsumerEnvironmentError(invalid, problems);
  return values as Pick<ConsumerEnvironment, V>;
}
