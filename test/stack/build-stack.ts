import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { OncelyOutbox, type OncelyOutboxProps } from '../../lib/constructs/oncely-outbox.js';
import { OncelyPipeline, type OncelyPipelineProps } from '../../lib/constructs/oncely-pipeline.js';

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

/** The outbox's props, or a function making them in the stack (for resources of their own: a table, a queue). */
type OutboxPropsIn = Partial<OncelyOutboxProps> | ((stack: Stack) => Partial<OncelyOutboxProps>);

/**
 * An OncelyOutbox in a stack of its own beside a pipeline, whose queue it publishes to unless the
 * props name a queue; synthesised without bundling. `context` is the app's (e.g. `oncely:sandbox`);
 * `after` adds to the stack before the synth (a producer to grant, say).
 */
export function buildOutboxStack(
  propsIn: OutboxPropsIn = {},
  options: { context?: Record<string, unknown>; after?: (outbox: OncelyOutbox, stack: Stack) => void } = {},
) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...options.context } });
  const stack = new Stack(app, 'Test');
  const pipeline = new OncelyPipeline(stack, 'Pipeline', { consumer: { entry: FIXTURE_CONSUMER } });
  const props = typeof propsIn === 'function' ? propsIn(stack) : propsIn;
  const outbox = new OncelyOutbox(stack, 'Outbox', props.queue ? props : { pipeline, ...props });
  options.after?.(outbox, stack);
  return { app, stack, pipeline, outbox, template: Template.fromStack(stack) };
}
