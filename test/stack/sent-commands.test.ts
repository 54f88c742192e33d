import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { type IRole, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Code, type IFunction, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { LEGACY_UNRESOLVED_INDEX_NAME, UNRESOLVED_INDEX_NAME } from '../../lambdas/idempotency/record.js';
import { OUTBOX_PENDING_INDEX } from '../../lambdas/outbox/layout.js';
import { OncelyOutbox } from '../../lib/constructs/oncely-outbox.js';
import { OncelyPipeline } from '../../lib/constructs/oncely-pipeline.js';
import { FIXTURE_CONSUMER } from './build-stack.js';
import { bundledModules, type SentRequest, sentRequests } from './sent-commands.js';

/**
 * The Done-when check of issue 30: every function the constructs deploy, and every grantee of their
 * `grant*` methods, is granted exactly the requests its code can send, on the resources it sends
 * them to. The code side is read from the source (sent-commands.ts), the grant side from the
 * synthesised template. moto and the emulators enforce no IAM: this is where a request added
 * without its grant, or a grant no request uses, shows.
 */

/** Where each function sends its requests: the label of the resource each service's request is on. */
type Where = (request: SentRequest) => string;
interface CodeUnderTest {
  entry: string;
  /** The names a caller starts from: the handler, or what a user's code calls of the entry point. */
  roots: string[];
  where: Where;
  /** Granted for Lambda itself (the event source's poller, the stream, the failure destination) or by CDK beside the code's requests. */
  besideTheCode?: string[];
  /**
   * Units (`Class.member`) the code reaches by name but never calls, each with why: not followed.
   * Each must still be reached, so that a stale entry fails here too.
   */
  notCalled?: Record<string, string>;
}

const idempotency: Where = (request) => (request.on === 'index' ? 'idempotency index' : 'idempotency table');
const outboxTable: Where = (request) => (request.on === 'index' ? 'outbox index' : 'outbox table');

/** The consumer's requests: poison records to the DLQ; deletes and standardBatch's visibility changes on the queue it reads. */
const consumerWhere =
  (prefix: string): Where =>
  (request) =>
    request.action === 'sqs:SendMessage'
      ? `${prefix}dlq`
      : request.action.startsWith('sqs:')
        ? `${prefix}queue`
        : `${prefix}${idempotency(request)}`;

/** A consumer's code: every entry point of `oncely/consumer`, whichever middleware the user's code calls. */
const consumerCode = (prefix: string): CodeUnderTest => ({
  entry: 'lambdas/consumer/index.ts',
  roots: [
    'fifoBatch',
    'processFifoBatch',
    'standardBatch',
    'processStandardBatch',
    'leaseOperation',
    'transactionalOperation',
  ],
  where: consumerWhere(prefix),
  besideTheCode: [
    `sqs:ReceiveMessage on ${prefix}queue`,
    `sqs:GetQueueAttributes on ${prefix}queue`,
    `sqs:GetQueueUrl on ${prefix}queue`,
  ],
});

const CODE: Record<string, CodeUnderTest> = {
  publisher: {
    entry: 'lambdas/publisher/handler.ts',
    roots: ['handler'],
    where: (request) => (request.action.startsWith('sqs:') ? 'queue' : idempotency(request)),
    notCalled: {
      // It would read (GetItem) the record before an expired lease taken ahead (DESIGN §4.1).
      'LeaseCore.#settleUnstarted':
        'the at-most-once chain’s recovery: the publisher’s request records are at-least-once leases, never ' +
        'taken ahead (and only its own, publish#…)',
    },
  },
  consumer: consumerCode(''),
  // A standard pipeline's consumer (queueType 'standard', DESIGN §5.1): the same code, on its own queues.
  'standard consumer': consumerCode('standard '),
  monitor: {
    entry: 'lambdas/monitor/handler.ts',
    roots: ['handler'],
    where: idempotency,
    // The same Query on the earlier versions' index while the new one backfills (`onUnresolvedIndex`):
    // the index name is a variable there, which the reading cannot follow.
    besideTheCode: ['dynamodb:Query on idempotency legacy index'],
  },
  relay: {
    entry: 'lambdas/outbox/relay-handler.ts',
    roots: ['handler'],
    where: (request) => (request.action.startsWith('sqs:') ? 'queue' : outboxTable(request)),
    besideTheCode: [
      'dynamodb:DescribeStream on stream',
      'dynamodb:GetRecords on stream',
      'dynamodb:GetShardIterator on stream',
      'dynamodb:ListStreams on *',
      'sqs:SendMessage on failure queue',
      'sqs:GetQueueAttributes on failure queue',
      'sqs:GetQueueUrl on failure queue',
    ],
  },
  sweeper: {
    entry: 'lambdas/outbox/sweeper-handler.ts',
    roots: ['handler'],
    where: (request) => (request.action.startsWith('sqs:') ? 'queue' : outboxTable(request)),
  },
  // The grantees: a function of the user's, running what the entry point gives it.
  'grantIdempotency’s function': {
    entry: 'lambdas/idempotency/index.ts',
    roots: [
      'LeaseIdempotency',
      'TransactionalIdempotency',
      'idempotentRequest',
      'DynamoDBIdempotencyStore',
      'run',
    ],
    where: idempotency,
  },
  'grantWrite’s producer': {
    entry: 'lambdas/outbox/index.ts',
    roots: ['Outbox', 'write'],
    where: outboxTable,
  },
  'grantPublish’s service': {
    entry: 'lambdas/client/index.ts',
    roots: ['publish'],
    where: () => 'publisher',
    // CDK's grantInvoke also allows the publisher's versions and aliases: the same function.
    besideTheCode: ['lambda:InvokeFunction on publisher versions'],
  },
};

const sent: Record<string, string[]> = {};
const met: Record<string, string[]> = {};
const { stack, template, roles, labels } = synthesise();

beforeAll(async () => {
  await Promise.all(
    Object.entries(CODE).map(async ([name, code]) => {
      const notCalled = Object.keys(code.notCalled ?? {});
      const read = sentRequests(await bundledModules(code.entry), code.roots, notCalled);
      sent[name] = unique(read.requests.map((request) => `${request.action} on ${code.where(request)}`));
      met[name] = read.met;
    }),
  );
}, 240_000);

describe('each function is granted exactly what its code sends', () => {
  it.each(Object.keys(CODE))('%s', (name) => {
    const code = CODE[name] as CodeUnderTest;
    const granted = grantedTo(roles[name] as IRole).filter(
      (key) => !key.startsWith('logs:') && !(code.besideTheCode ?? []).includes(key),
    );
    expect({ granted: granted.sort() }).toEqual({ granted: (sent[name] as string[]).sort() });
  });

  it('and every unit taken as never called is still one its code reaches (no stale exception)', () => {
    for (const [name, code] of Object.entries(CODE)) {
      expect({ [name]: met[name]?.sort() }).toEqual({ [name]: Object.keys(code.notCalled ?? {}).sort() });
    }
  });

  it('reads the commands of the code: the publisher sends its batch and the relay its marks', () => {
    expect(sent.publisher).toContain('sqs:SendMessage on queue');
    expect(sent.relay).toEqual(
      expect.arrayContaining(['dynamodb:UpdateItem on outbox table', 'dynamodb:DeleteItem on outbox table']),
    );
    expect(sent.monitor).toEqual([
      'dynamodb:Query on idempotency index',
      'dynamodb:UpdateItem on idempotency table',
    ]);
  });
});

/**
 * A pipeline and an outbox on its queue, with one grantee of each `grant*` method; each function's
 * role by its name in CODE, and the label of each resource ARN as the template writes it.
 */
function synthesise() {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Test');
  const pipeline = new OncelyPipeline(stack, 'Pipeline', { consumer: { entry: FIXTURE_CONSUMER } });
  const outbox = new OncelyOutbox(stack, 'Outbox', { pipeline });
  const standard = new OncelyPipeline(stack, 'Standard', {
    consumer: { entry: FIXTURE_CONSUMER },
    queueType: 'standard',
    outputPrefix: 'Standard',
  });
  const userFunction = (id: string) =>
    new LambdaFunction(stack, id, {
      runtime: Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: Code.fromInline('export const handler = async () => 1;'),
    });
  const core = userFunction('Api');
  pipeline.grantIdempotency(core);
  const producer = userFunction('OrderService');
  outbox.grantWrite(producer);
  const service = new Role(stack, 'Service', { assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com') });
  pipeline.grantPublish(service);
  const roleOf = (fn: IFunction) => fn.role as IRole;
  const roles: Record<string, IRole> = {
    publisher: roleOf(pipeline.publisher),
    consumer: roleOf(pipeline.consumer),
    'standard consumer': roleOf(standard.consumer),
    monitor: roleOf(pipeline.unresolvedMonitor),
    relay: roleOf(outbox.relay),
    sweeper: roleOf(outbox.sweeper),
    'grantIdempotency’s function': roleOf(core),
    'grantWrite’s producer': roleOf(producer),
    'grantPublish’s service': service,
  };
  const arns: Record<string, string> = {
    'idempotency table': pipeline.idempotencyTable.tableArn,
    'idempotency index': `${pipeline.idempotencyTable.tableArn}/index/${UNRESOLVED_INDEX_NAME}`,
    'idempotency legacy index': `${pipeline.idempotencyTable.tableArn}/index/${LEGACY_UNRESOLVED_INDEX_NAME}`,
    'outbox table': outbox.table.tableArn,
    'outbox index': `${outbox.table.tableArn}/index/${OUTBOX_PENDING_INDEX}`,
    stream: outbox.table.tableStreamArn as string,
    queue: pipeline.queue.queueArn,
    dlq: pipeline.deadLetterQueue.queueArn,
    'standard idempotency table': standard.idempotencyTable.tableArn,
    'standard idempotency index': `${standard.idempotencyTable.tableArn}/index/${UNRESOLVED_INDEX_NAME}`,
    'standard queue': standard.queue.queueArn,
    'standard dlq': standard.deadLetterQueue.queueArn,
    'failure queue': outbox.relayFailureQueue.queueArn,
    publisher: pipeline.publisher.functionArn,
    // grantInvoke's second resource: any version or alias of the publisher.
    'publisher versions': `${pipeline.publisher.functionArn}:*`,
    '*': '*',
  };
  const template = Template.fromStack(stack);
  const labels = new Map(
    Object.entries(arns).map(([label, arn]) => [JSON.stringify(stack.resolve(arn)), label]),
  );
  return { stack, template, roles, labels };
}

/** Each `action on resource` the role's policies allow, the resource by its label. */
function grantedTo(role: IRole): string[] {
  const ref = JSON.stringify({ Ref: stack.getLogicalId(role.node.defaultChild as CfnElement) });
  return unique(
    Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) => JSON.stringify(policy.Properties.Roles).includes(ref))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
      .flatMap((statement: { Action: string | string[]; Resource: unknown }) =>
        [statement.Action]
          .flat()
          .flatMap((action) =>
            [statement.Resource].flat().map((resource) => `${action} on ${labelOf(resource)}`),
          ),
      ),
  );
}

function labelOf(resource: unknown): string {
  return labels.get(JSON.stringify(resource)) ?? `unknown ${JSON.stringify(resource)}`;
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
