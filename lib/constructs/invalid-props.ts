import type { IConstruct } from 'constructs';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';

/**
 * What a construct throws at synth for props that cannot work: the construct by its path, then
 * every problem at once, each saying what to change.
 */
export function invalidProps(
  kind: string,
  construct: IConstruct,
  problems: readonly string[],
): OncelyConfigurationError {
  return new OncelyConfigurationError(
    [construct.node.path],
    `Invalid ${kind} ${construct.node.path}: change these props and synthesize again:\n- ${problems.join('\n- ')}`,
  );
}

/**
 * Throws {@link invalidProps} for unknown props (`unknownKeyProblems`), if any: first, as the other
 * checks read the props and a misspelt one would mislead them.
 */
export function refuseUnknownProps(kind: string, construct: IConstruct, problems: readonly string[]): void {
  if (problems.length > 0) throw invalidProps(kind, construct, problems);
}
