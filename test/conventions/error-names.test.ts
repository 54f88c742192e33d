import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as client from '../../lambdas/client/index.js';
import * as consumerErrors from '../../lambdas/consumer/errors.js';
import * as consumer from '../../lambdas/consumer/index.js';
import * as idempotency from '../../lambdas/idempotency/index.js';
import * as outbox from '../../lambdas/outbox/index.js';
import * as cdk from '../../lib/constructs/index.js';

// One way to name errors (lambdas/common/oncely-error.ts): every error class an entry point exports
// fixes its name in an own static `errorName`, which OncelyError gives each instance, since a
// minifying bundler renames the classes themselves. And one class per name, across the package.

const ENTRY_POINTS = { consumer, idempotency, client, outbox, cdk };
/** Modules whose error classes no entry point exports (a consumer wired to the wrong queue): checked alike. */
const INTERNAL = { 'consumer/errors': consumerErrors };

type ErrorClass = (abstract new (...args: never[]) => Error) & { errorName?: unknown };

/** A name other than the class's, kept on purpose: it is the DLQ reason deployed queues carry. */
const NAMED_OTHERWISE: Record<string, string> = { PastDedupHorizonError: 'PastDedupHorizon' };

/** Arguments for the constructors that do not take a message. */
const ARGUMENTS: Record<string, unknown[]> = {
  UnknownMessageTypeError: ['order.placed', ['order.paid']],
  UnparsableMessageError: [{ messageId: 'm-1' }, new Error('bad')],
  InvalidPayloadError: ['order.placed', 'total is missing'],
  MissingMessageGroupError: ['m-1'],
  IdempotencyStoreUnavailableError: ['k-1', new Error('down')],
  PastDedupHorizonError: ['2026-01-01T00:00:00Z', 60],
  IdempotencyInProgressError: ['k-1', 0],
  IdempotencyInDoubtError: ['k-1', { name: 'OutcomeUnknownError', message: 'timeout' }],
  IdempotencyConflictError: ['k-1'],
  IdempotencyRejectedError: ['k-1', { name: 'NonRetryableError', message: 'no' }],
  ResultTooLargeError: ['k-1', 500_000, 400_000],
  TransactionConditionFailedError: ['k-1', [{ index: 0, code: 'ConditionalCheckFailed' }]],
  TransactionContentionError: ['k-1', 3],
  RecordNotWrittenError: ['k-1', 'COMPLETED', new Error('throttled')],
  RecordNotReplicatedError: ['k-1', 0, 1, 100],
  InvalidRecordWriteError: ['k-1', new Error('too large')],
  TransactionalStoreError: [['ledger'], 'ValkeyIdempotencyStore'],
  PublishValidationError: [[{ path: 'messages[0].groupId', message: 'is missing' }]],
  PublishConflictError: ['r-1'],
  PublishInProgressError: ['r-1', 0],
  PublisherInvocationError: ['Sandbox.Timedout', 'timed out'],
  OncelyConfigurationError: [['QUEUE_URL'], 'QUEUE_URL is not set'],
  OutboxValidationError: [[{ path: 'messages[0].key', message: 'is missing' }]],
  OutboxWriteCanceledError: [[{ kind: 'write', index: 0, code: 'ConditionalCheckFailed' }]],
};

function isErrorClass(value: unknown): value is ErrorClass {
  return typeof value === 'function' && value.prototype instanceof Error;
}

/** Every exported error class (and the internal ones) with the modules exporting it. */
function exportedErrorClasses(): Map<ErrorClass, string[]> {
  const found = new Map<ErrorClass, string[]>();
  for (const [entryPoint, exports] of Object.entries({ ...ENTRY_POINTS, ...INTERNAL })) {
    for (const [exportName, value] of Object.entries(exports)) {
      if (isErrorClass(value)) found.set(value, [...(found.get(value) ?? []), `${entryPoint}.${exportName}`]);
    }
  }
  return found;
}

function ancestors(type: ErrorClass): ErrorClass[] {
  const chain: ErrorClass[] = [];
  for (let base = Object.getPrototypeOf(type); base !== Error; base = Object.getPrototypeOf(base)) {
    chain.push(base);
  }
  return chain;
}

const classes = exportedErrorClasses();

const ROOT = join(import.meta.dirname, '..', '..');
/** The package's source (the shop example's too), where the CLI's and the sandbox's unexported errors live. */
const SOURCE_FOLDERS = ['lambdas', 'lib', 'cli', 'sandbox', 'bin'];
const BASE = 'lambdas/common/oncely-error.ts';

function sourceFiles(): string[] {
  return SOURCE_FOLDERS.flatMap((folder) =>
    readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts'))
      .map((name) => `${folder}/${name}`),
  );
}

describe('error names', () => {
  it('finds the error classes the entry points export', () => {
    expect(classes.size).toBeGreaterThan(30);
  });

  it.each([...classes].map(([type, exportedAs]) => [type.name, type, exportedAs] as const))(
    '%s fixes its name in an own static errorName, which its instances carry',
    (className, type, exportedAs) => {
      const expected = NAMED_OTHERWISE[className] ?? className;
      expect(Object.hasOwn(type, 'errorName'), `${exportedAs.join(', ')} has no own static errorName`).toBe(
        true,
      );
      expect(type.errorName).toBe(expected);
      const instance = Reflect.construct(type, ARGUMENTS[className] ?? ['a message']) as Error;
      expect(instance.name).toBe(expected);
      expect(instance).toBeInstanceOf(idempotency.OncelyError);
    },
  );

  it('gives no two classes one name, exported or extended', () => {
    const byName = new Map<string, Set<ErrorClass>>();
    for (const type of classes.keys()) {
      for (const named of [type, ...ancestors(type)]) {
        byName.set(named.name, (byName.get(named.name) ?? new Set()).add(named));
      }
    }
    const shared = [...byName].filter(([, types]) => types.size > 1).map(([name]) => name);
    expect(shared).toEqual([]);
  });

  it('is the only way any class of the package names itself: no other Error base, no name set by hand', () => {
    const other = sourceFiles()
      .filter((file) => file !== BASE)
      .flatMap((file) =>
        readFileSync(join(ROOT, file), 'utf8')
          .split('\n')
          .map((line, index) => ({ file, line: index + 1, text: line.trim() }))
          .filter(({ text }) => /\bextends Error\b|\bthis\.name\s*=|\breadonly name\s*=/.test(text)),
      );
    expect(other).toEqual([]);
  });
});
