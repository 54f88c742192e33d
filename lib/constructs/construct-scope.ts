import { Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * A construct's name that no other construct shares in an account and Region:
 * `<stack name>/<its path in the stack>` (stack names are unique there). Its functions' metrics
 * carry it as a dimension, which its alarms select (`METRICS_SCOPE_ENVIRONMENT`).
 */
export function constructScope(construct: IConstruct): string {
  const stack = Stack.of(construct);
  const inStack = construct.node.path.slice(stack.node.path.length + 1);
  return `${stack.stackName}/${inStack}`;
}
