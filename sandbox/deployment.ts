import { createHash } from 'node:crypto';
import type { CloudFormationTemplate } from './cloudformation.js';
import type { ProvisionedStack } from './provision.js';

/** What the sandbox deployed, as CloudFormation's and Lambda's read APIs describe it. */
export interface Deployment {
  region: string;
  accountId: string;
  /** When the sandbox provisioned the app: every stack's creation time. */
  createdAt: Date;
  stacks: DeployedStack[];
  functions: DeployedFunction[];
  mappings: DeployedMapping[];
}

export interface DeployedStack {
  name: string;
  id: string;
  outputs: { OutputKey: string; OutputValue: string; ExportName?: string }[];
  resources: DeployedResource[];
}

export interface DeployedResource {
  logicalId: string;
  type: string;
  /** Absent for what the sandbox does not emulate (IAM, alarms, logs…): `note` says so. */
  physicalId?: string;
  note?: string;
}

export interface DeployedFunction {
  name: string;
  arn: string;
  runtime: string;
  handler: string;
  timeoutSeconds: number;
  memoryMiB: number;
  architectures: string[];
  role?: string;
  environment: Record<string, string>;
}

export interface DeployedMapping {
  uuid: string;
  functionArn: string;
  eventSourceArn: string;
  batchSize: number;
  functionResponseTypes: string[];
  startingPosition?: string;
  maximumConcurrency?: number;
  maximumBatchingWindowInSeconds?: number;
  filterPatterns: string[];
  /** `Enabled: false`: deployed, not polled (State `Disabled`). */
  enabled: boolean;
  onFailure?: string;
}

export interface DeployedApp {
  stack: ProvisionedStack;
  template: CloudFormationTemplate;
}

/**
 * The app as deployed locally: each stack with its outputs and every resource of its template (a
 * physical id for what the sandbox created, a note for what it does not emulate), its functions
 * with their template's environment, and its event source mappings.
 */
export function describeDeployment(
  apps: DeployedApp[],
  options: { region: string; accountId: string },
): Deployment {
  const { region, accountId } = options;
  const stacks = apps.map(({ stack, template }): DeployedStack => {
    const notes = new Map(
      stack.notEmulated.map((entry) => [entry.logicalId, entry.note ?? 'its type is not emulated']),
    );
    return {
      name: stack.stackName,
      id: `arn:aws:cloudformation:${region}:${accountId}:stack/${stack.stackName}/${stableUuid(stack.stackName)}`,
      outputs: stack.outputs,
      resources: Object.entries(template.Resources).map(([logicalId, resource]) => {
        const physicalId =
          resource.Type === 'AWS::Lambda::EventSourceMapping'
            ? mappingUuid(stack.stackName, logicalId)
            : stack.physicalIds.get(logicalId);
        const entry = { logicalId, type: resource.Type };
        if (physicalId !== undefined && !notes.has(logicalId)) return { ...entry, physicalId };
        return { ...entry, note: notes.get(logicalId) ?? 'its type is not emulated' };
      }),
    };
  });
  const functions = apps.flatMap(({ stack }) =>
    stack.functions.map(
      (fn): DeployedFunction => ({
        name: fn.name,
        arn: fn.arn,
        runtime: fn.runtime,
        handler: fn.handler,
        timeoutSeconds: fn.timeoutSeconds,
        memoryMiB: fn.memoryMiB,
        architectures: fn.architectures,
        ...(fn.role && { role: fn.role }),
        environment: fn.environment,
      }),
    ),
  );
  const arnOf = (name: string) => functions.find((fn) => fn.name === name)?.arn ?? name;
  const mappings = apps.flatMap(({ stack }) => [
    ...stack.eventSources.map(
      (source): DeployedMapping => ({
        uuid: mappingUuid(stack.stackName, source.logicalId),
        functionArn: arnOf(source.functionName),
        eventSourceArn: source.queue.arn,
        batchSize: source.batchSize,
        functionResponseTypes: source.reportBatchItemFailures ? ['ReportBatchItemFailures'] : [],
        ...(source.maxConcurrencySet && { maximumConcurrency: source.maxConcurrency }),
        maximumBatchingWindowInSeconds: source.maximumBatchingWindowInSeconds,
        filterPatterns: source.filterPatterns,
        enabled: source.enabled,
      }),
    ),
    ...stack.streamSources.map(
      (source): DeployedMapping => ({
        uuid: mappingUuid(stack.stackName, source.logicalId),
        functionArn: source.functionArn,
        eventSourceArn: source.streamArn,
        batchSize: source.batchSize,
        functionResponseTypes: source.reportBatchItemFailures ? ['ReportBatchItemFailures'] : [],
        startingPosition: source.startingPosition,
        filterPatterns: source.filterPatterns,
        enabled: true,
        ...(source.onFailure && { onFailure: source.onFailure.arn }),
      }),
    ),
  ]);
  return { region, accountId, createdAt: new Date(), stacks, functions, mappings };
}

/** A mapping's UUID: the same for the same stack and logical id, run after run, as a deployed one keeps its own. */
function mappingUuid(stackName: string, logicalId: string): string {
  return stableUuid(`${stackName}/${logicalId}`);
}

function stableUuid(seed: string): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
