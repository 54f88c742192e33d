import { describe, expect, it } from 'vitest';
import { leaseOperation, transactionalOperation } from '../../lambdas/consumer/index.js';
import { IdempotencyConfigurationError } from '../../lambdas/idempotency/index.js';

// The publisher's request records are `publish#<requestId>`, and IAM keeps the consumer off them
// (lib/constructs/record-grants.ts): an operation in that namespace would fail every record with
// AccessDenied on AWS, and pass in the sandbox, which enforces no IAM. So it is refused where it is built.
describe('an operation’s namespace', () => {
  const run = async () => undefined;
  const plan = () => ({ writes: [] });

  it('refuses the publisher’s namespace when the operation is built, for both modes', () => {
    expect(() => leaseOperation({ namespace: 'publish', mode: 'at-least-once', run })).toThrow(
      IdempotencyConfigurationError,
    );
    expect(() => transactionalOperation({ namespace: 'publish', plan })).toThrow(
      /reserved for the publisher/,
    );
  });

  it('refuses a namespace records cannot have when the operation is built, not on its first record', () => {
    expect(() => leaseOperation({ namespace: 'has space', mode: 'at-least-once', run })).toThrow(
      /Invalid idempotency namespace/,
    );
    expect(() => transactionalOperation({ namespace: '', plan })).toThrow(/Invalid idempotency namespace/);
  });

  it('accepts a namespace that only starts like the publisher’s', () => {
    expect(leaseOperation({ namespace: 'publisher-audit', mode: 'at-least-once', run }).namespace).toBe(
      'publisher-audit',
    );
    expect(transactionalOperation({ namespace: 'publish.v2', plan }).namespace).toBe('publish.v2');
  });
});
