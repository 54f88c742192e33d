// The deploy test's app for `leaseRecords: 'valkey'` (test/deploy/valkey-deploy.test.ts): one
// pipeline whose consumer keeps its lease records in a serverless Valkey cache, nothing retained.
import { fileURLToPath } from 'node:url';
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { OncelyPipeline } from '../../../lib/constructs/oncely-pipeline.js';

const app = new App();
// Environment-agnostic, like the shop's stacks: the VPC's AZs are Fn::GetAZs, and no lookup
// writes a cdk.context.json into the repository.
const stack = new Stack(app, 'ValkeyLeases');
new OncelyPipeline(stack, 'Pipeline', {
  consumer: { entry: fileURLToPath(new URL('../../fixtures/minimal-consumer.ts', import.meta.url)) },
  leaseRecords: 'valkey',
  removalPolicy: RemovalPolicy.DESTROY,
});
