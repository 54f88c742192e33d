import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { OncelyPipelineProps } from '../../src/cdk/oncely-pipeline.js';
import { OncelyStack } from '../../examples/shop/lib/oncely-stack.js';

/** Synthesises the app stack without bundling the Lambdas (that is `npm run synth`'s job). */
export function buildStack(pipeline: Partial<OncelyPipelineProps> = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new OncelyStack(app, 'Test', {
    pipeline: { notificationUrl: 'https://mail.example.com/send', ...pipeline },
  });
  return { app, stack, template: Template.fromStack(stack) };
}
