import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { OncelyPipeline, type OncelyPipelineProps } from '../../src/cdk/oncely-pipeline.js';

/** A consumer entry for the construct; never bundled here. */
export const FIXTURE_CONSUMER = fileURLToPath(new URL('../fixtures/minimal-consumer.ts', import.meta.url));

/**
 * The construct in a stack of its own, synthesised without bundling the Lambdas (that is
 * `npm run synth`'s job, and the sandbox's).
 */
export function buildStack(props: Partial<OncelyPipelineProps> = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Test');
  const pipeline = new OncelyPipeline(stack, 'Pipeline', { consumer: { entry: FIXTURE_CONSUMER }, ...props });
  return { app, stack, pipeline, template: Template.fromStack(stack) };
}
