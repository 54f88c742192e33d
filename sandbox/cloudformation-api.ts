import { randomUUID } from 'node:crypto';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import type { DeployedResource, DeployedStack, Deployment } from './deployment.js';

/** An answer of CloudFormation's query protocol: an XML body and its HTTP status. */
export interface QueryAnswer {
  status: number;
  xml: string;
}

const NAMESPACE = 'http://cloudformation.amazonaws.com/doc/2010-05-15/';
/** Operations that would change a stack: the sandbox provisions from the app, not from these. */
const WRITES = new Set([
  'CreateStack',
  'UpdateStack',
  'DeleteStack',
  'CreateChangeSet',
  'ExecuteChangeSet',
  'DeleteChangeSet',
  'ContinueUpdateRollback',
  'CancelUpdateStack',
  'RollbackStack',
  'SignalResource',
  'SetStackPolicy',
  'UpdateTerminationProtection',
  'ImportStacksToStackSet',
  'CreateStackSet',
  'UpdateStackSet',
  'DeleteStackSet',
]);

type Operation = (params: URLSearchParams, deployment: Deployment) => string;

const READS: Record<string, Operation> = {
  DescribeStacks: (params, deployment) => {
    const name = params.get('StackName');
    const stacks = name ? [stackNamed(deployment, name)] : deployment.stacks;
    return `<Stacks>${stacks.map((stack) => member(describeStack(stack, deployment))).join('')}</Stacks>`;
  },
  ListStackResources: (params, deployment) => {
    const stack = stackNamed(deployment, required(params, 'StackName'));
    const summaries = stack.resources.map((resource) =>
      member(
        `<LogicalResourceId>${text(resource.logicalId)}</LogicalResourceId>` +
          `<ResourceType>${text(resource.type)}</ResourceType>${physical(resource)}` +
          `<LastUpdatedTimestamp>${deployment.createdAt.toISOString()}</LastUpdatedTimestamp>${status(resource)}`,
      ),
    );
    return `<StackResourceSummaries>${summaries.join('')}</StackResourceSummaries>`;
  },
  DescribeStackResources: (params, deployment) => {
    const stack = stackNamed(deployment, required(params, 'StackName'));
    const logicalId = params.get('LogicalResourceId');
    const resources = stack.resources.filter((resource) => !logicalId || resource.logicalId === logicalId);
    return `<StackResources>${resources.map((resource) => member(stackResource(stack, resource, deployment))).join('')}</StackResources>`;
  },
  DescribeStackResource: (params, deployment) => {
    const stack = stackNamed(deployment, required(params, 'StackName'));
    const logicalId = required(params, 'LogicalResourceId');
    const resource = stack.resources.find((candidate) => candidate.logicalId === logicalId);
    if (!resource) {
      throw new QueryError('ValidationError', `Resource ${logicalId} does not exist for stack ${stack.name}`);
    }
    return `<StackResourceDetail>${stackResource(stack, resource, deployment)}</StackResourceDetail>`;
  },
  ListExports: (_params, deployment) => {
    const exports = deployment.stacks.flatMap((stack) =>
      stack.outputs.flatMap((output) =>
        output.ExportName
          ? [
              member(
                `<ExportingStackId>${text(stack.id)}</ExportingStackId><Name>${text(output.ExportName)}</Name>` +
                  `<Value>${text(output.OutputValue)}</Value>`,
              ),
            ]
          : [],
      ),
    );
    return `<Exports>${exports.join('')}</Exports>`;
  },
};

/** A request CloudFormation would refuse, as its XML error names it. */
class QueryError extends OncelyError {
  static override readonly errorName: string = 'QueryError';
  readonly retryable = false;
  constructor(
    readonly code: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

/**
 * Answers one request of CloudFormation's query protocol (a form body with `Action=`) from what the
 * sandbox deployed: the read operations as CloudFormation answers them; a write, or anything else,
 * with an error that says why, never a silent success.
 */
export function answerCloudFormation(body: string, deployment: Deployment): QueryAnswer {
  const params = new URLSearchParams(body);
  const action = params.get('Action') ?? '';
  const requestId = randomUUID();
  try {
    const read = Object.hasOwn(READS, action) ? READS[action] : undefined;
    if (!read) {
      if (WRITES.has(action)) {
        throw new QueryError(
          'NotEmulated',
          `${action} is not emulated: the Oncely sandbox provisions the stacks of your CDK app when it starts. ` +
            'Change the app and restart `oncely local` instead.',
        );
      }
      throw new QueryError(
        'InvalidAction',
        `The Oncely sandbox answers CloudFormation's ${Object.keys(READS).join(', ')}, not ${action || 'a request without Action'}.`,
      );
    }
    const result = read(params, deployment);
    return {
      status: 200,
      xml:
        `<${action}Response xmlns="${NAMESPACE}"><${action}Result>${result}</${action}Result>` +
        `<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${action}Response>`,
    };
  } catch (error) {
    if (!(error instanceof QueryError)) throw error;
    return {
      status: error.status,
      xml:
        `<ErrorResponse xmlns="${NAMESPACE}"><Error><Type>Sender</Type><Code>${error.code}</Code>` +
        `<Message>${text(error.message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
    };
  }
}

function stackNamed(deployment: Deployment, nameOrId: string): DeployedStack {
  const stack = deployment.stacks.find(
    (candidate) => candidate.name === nameOrId || candidate.id === nameOrId,
  );
  if (!stack) throw new QueryError('ValidationError', `Stack with id ${nameOrId} does not exist`);
  return stack;
}

function required(params: URLSearchParams, name: string): string {
  const value = params.get(name);
  if (!value)
    throw new QueryError('ValidationError', `1 validation error detected: ${name} must not be null`);
  return value;
}

function describeStack(stack: DeployedStack, deployment: Deployment): string {
  const outputs = stack.outputs.map((output) =>
    member(
      `<OutputKey>${text(output.OutputKey)}</OutputKey><OutputValue>${text(output.OutputValue)}</OutputValue>` +
        (output.ExportName ? `<ExportName>${text(output.ExportName)}</ExportName>` : ''),
    ),
  );
  return (
    `<StackName>${text(stack.name)}</StackName><StackId>${text(stack.id)}</StackId>` +
    `<CreationTime>${deployment.createdAt.toISOString()}</CreationTime><StackStatus>CREATE_COMPLETE</StackStatus>` +
    `<Description>Provisioned by the Oncely sandbox (oncely local)</Description><Outputs>${outputs.join('')}</Outputs>`
  );
}

function stackResource(stack: DeployedStack, resource: DeployedResource, deployment: Deployment): string {
  return (
    `<StackName>${text(stack.name)}</StackName><StackId>${text(stack.id)}</StackId>` +
    `<LogicalResourceId>${text(resource.logicalId)}</LogicalResourceId>${physical(resource)}` +
    `<ResourceType>${text(resource.type)}</ResourceType><Timestamp>${deployment.createdAt.toISOString()}</Timestamp>` +
    `<LastUpdatedTimestamp>${deployment.createdAt.toISOString()}</LastUpdatedTimestamp>${status(resource)}`
  );
}

function physical(resource: DeployedResource): string {
  return resource.physicalId === undefined
    ? ''
    : `<PhysicalResourceId>${text(resource.physicalId)}</PhysicalResourceId>`;
}

/** What the sandbox created is complete; what it does not emulate says so in its reason. */
function status(resource: DeployedResource): string {
  return resource.note === undefined
    ? '<ResourceStatus>CREATE_COMPLETE</ResourceStatus>'
    : `<ResourceStatus>CREATE_COMPLETE</ResourceStatus><ResourceStatusReason>Not emulated by the Oncely sandbox: ${text(resource.note)}</ResourceStatusReason>`;
}

function member(content: string): string {
  return `<member>${content}</member>`;
}

function text(value: string): string {
  return value.replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c] ?? c,
  );
}
