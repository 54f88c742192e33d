import type { Construct } from 'constructs';

/**
 * The CDK context key `oncely local` synthesises with (always `"true"`): an app or a construct may
 * read it to configure itself for local runs, as `OncelyOutbox` and the example shop do.
 */
export const SANDBOX_CONTEXT = 'oncely:sandbox';

/** Whether `scope` is being synthesised by `oncely local`. */
export function inSandbox(scope: Construct): boolean {
  return scope.node.tryGetContext(SANDBOX_CONTEXT) !== undefined;
}
