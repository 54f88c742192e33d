import { Duration } from 'aws-cdk-lib';
import { type IGrantable, UnknownPrincipal } from 'aws-cdk-lib/aws-iam';
import { type CfnFunction, type IFunction, Function as LambdaFunctionResource } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import {
  minimumVisibilitySeconds,
  type ResolvedSettings,
  VISIBILITY_TIMEOUT_FACTOR,
} from './pipeline-settings.js';

/** Lambda's timeout when a function sets none. */
const LAMBDA_DEFAULT_TIMEOUT = Duration.seconds(3);

/**
 * Why the construct cannot grant to a function you built, or undefined if it can. A function
 * without a role (`Function.fromFunctionArn`, or imported without one) takes every grant silently
 * and gets nothing: its principal is CDK's `UnknownPrincipal`, so `addToRolePolicy`, `grant*` and the
 * event source's queue grant skip it, and its first request fails on AWS with AccessDenied.
 */
export function roleProblem(grantee: IGrantable, use: string): string | undefined {
  if (!(grantee.grantPrincipal instanceof UnknownPrincipal)) return undefined;
  const name = Construct.isConstruct(grantee) ? grantee.node.path : String(grantee.grantPrincipal);
  return (
    `${use} ${name} has no role, so nothing can be granted to it (a function imported with ` +
    'Function.fromFunctionArn has none): pass one built in this app, or import it with its role, ' +
    '`Function.fromFunctionAttributes(scope, id, { functionArn, role: Role.fromRoleArn(scope, roleId, roleArn) })`.'
  );
}

/** Throws {@link roleProblem}'s error, for a `grant*` method: its grants would do nothing. */
export function assertGrantable(grantee: IGrantable, use: string): void {
  const problem = roleProblem(grantee, use);
  const name = Construct.isConstruct(grantee) ? grantee.node.path : String(grantee.grantPrincipal);
  if (problem) throw new OncelyConfigurationError([name], problem);
}

/**
 * What cannot work about the consumer you pass: no role to grant to, a timeout the queue's
 * visibility timeout is too short for (the rule the construct keeps for its own consumer, DESIGN §7:
 * otherwise a message reappears while an invocation still works on it, and past the timeout itself
 * AWS refuses the event source), or too little reserved concurrency. The timeout of a function
 * imported by ARN is unknown here.
 */
export function passedConsumerProblems(fn: IFunction, settings: ResolvedSettings): string[] {
  const problems = [roleProblem(fn, 'the consumer')].filter((problem) => problem !== undefined);
  if (fn instanceof LambdaFunctionResource) {
    const timeout = fn.timeout ?? LAMBDA_DEFAULT_TIMEOUT;
    const needed = minimumVisibilitySeconds(timeout, settings.maxBatchingWindow);
    if (settings.visibilityTimeout.toSeconds() < needed) {
      const window = settings.maxBatchingWindow ? ' + maxBatchingWindow' : '';
      problems.push(
        `the consumer ${fn.node.path}'s timeout (${timeout.toHumanString()}) needs a visibility timeout of at least ` +
          `${needed} seconds (${VISIBILITY_TIMEOUT_FACTOR} × its timeout${window}), and the queue's is ` +
          `${settings.visibilityTimeout.toHumanString()}: set consumerTimeout to its timeout (the visibility timeout ` +
          'follows), or shorten the function’s timeout.',
      );
    }
    const reserved = (fn.node.defaultChild as CfnFunction | undefined)?.reservedConcurrentExecutions;
    problems.push(...reservedConcurrencyProblems(reserved, settings.maxConcurrency));
  }
  return problems;
}

/**
 * Reserved concurrency below the event source's `maxConcurrency`: Lambda's pollers then invoke more
 * often than the function may run, the throttled batches go back to the queue and count receives,
 * and records that never ran can reach the DLQ (AWS's Lambda guide: keep maximum concurrency at or
 * below reserved concurrency).
 */
export function reservedConcurrencyProblems(reserved: unknown, maxConcurrency: number): string[] {
  if (typeof reserved !== 'number' || reserved >= maxConcurrency) return [];
  return [
    `the consumer's reservedConcurrentExecutions (${reserved}) is below maxConcurrency (${maxConcurrency}): ` +
      'Lambda would throttle batches the event source hands it, and each goes back to the queue with its ' +
      'receives counted, toward the DLQ. Raise reservedConcurrentExecutions to at least maxConcurrency, or ' +
      'lower maxConcurrency to it.',
  ];
}
