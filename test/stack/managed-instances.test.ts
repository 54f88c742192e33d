import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { SecurityGroup, Vpc } from 'aws-cdk-lib/aws-ec2';
import { CapacityProvider } from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { OncelyOutbox } from '../../lib/constructs/oncely-outbox.js';
import { OncelyPipeline } from '../../lib/constructs/oncely-pipeline.js';
import { FIXTURE_CONSUMER } from './build-stack.js';

// Lambda Managed Instances with the pinned aws-cdk-lib (DESIGN §8.1): the functions OncelyPipeline
// and OncelyOutbox build are placed on a capacity provider by aws-cdk-lib's own
// `CapacityProvider.addFunction`, called on the functions the constructs expose: no setting of
// Oncely's is needed for it, and the sandbox runs them so (test/sandbox/managed-environments.test.ts).

/** A pipeline and its outbox, synthesised without bundling, with every function they build on one capacity provider. */
function placedStack() {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Test');
  const pipeline = new OncelyPipeline(stack, 'Pipeline', { consumer: { entry: FIXTURE_CONSUMER } });
  const outbox = new OncelyOutbox(stack, 'Outbox', { pipeline });
  // The capacity provider is the application's, in a stack of its own (its VPC is no part of Oncely's).
  const network = new Stack(app, 'Network');
  const vpc = new Vpc(network, 'Vpc', { maxAzs: 2, natGateways: 0 });
  const provider = new CapacityProvider(network, 'Instances', {
    subnets: vpc.isolatedSubnets,
    securityGroups: [new SecurityGroup(network, 'InstancesSecurity', { vpc })],
  });
  const functions = [
    pipeline.consumer,
    pipeline.publisher,
    pipeline.unresolvedMonitor,
    outbox.relay,
    outbox.sweeper,
  ];
  for (const fn of functions) provider.addFunction(fn, { perExecutionEnvironmentMaxConcurrency: 8 });
  return { app, stack, functions: functions.length, template: Template.fromStack(stack) };
}

describe('the constructs’ functions on a capacity provider (Lambda Managed Instances)', () => {
  const { app, stack, functions, template } = placedStack();

  it('gives each function placed its CapacityProviderConfig', () => {
    const placed = template.findResources('AWS::Lambda::Function', {
      Properties: {
        Runtime: 'nodejs24.x',
        CapacityProviderConfig: {
          LambdaManagedInstancesCapacityProviderConfig: {
            CapacityProviderArn: Match.anyValue(),
            PerExecutionEnvironmentMaxConcurrency: 8,
          },
        },
      },
    });
    expect(Object.keys(placed)).toHaveLength(functions);
  });

  it('leaves Oncely’s stack clean in cdk-nag’s AWS Solutions pack', () => {
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    expect(report.violations).toEqual([]);
  });
});
