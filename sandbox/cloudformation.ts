import { OncelyError } from '../lambdas/common/oncely-error.js';
/** The slice of a CloudFormation template the sandbox reads. */
export interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
}

export interface CloudFormationTemplate {
  Resources: Record<string, TemplateResource>;
  Outputs?: Record<string, { Value: unknown; Export?: { Name: unknown } }>;
}

/** What `Ref` and `Fn::GetAtt` of a provisioned resource stand for locally. */
export interface ResourceAttributes {
  ref: string;
  attributes: Record<string, string>;
}

/** An intrinsic function or reference the sandbox cannot resolve: the template needs something it does not emulate. */
export class UnresolvableValueError extends OncelyError {
  static override readonly errorName: string = 'UnresolvableValueError';
  readonly retryable = false;
}

export interface ResolveContext {
  resources: ReadonlyMap<string, ResourceAttributes>;
  /** The values other stacks of the app export, by export name (`Fn::ImportValue`). */
  exports: ReadonlyMap<string, string>;
  region: string;
  accountId: string;
  stackName: string;
}

/**
 * Resolves `Ref`, `Fn::GetAtt`, `Fn::Join`, `Fn::Select`, `Fn::ImportValue` and pseudo parameters
 * against local resources.
 */
export function resolveValue(value: unknown, context: ResolveContext): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveValue(item, context));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value);
  if (entries.length !== 1) {
    return Object.fromEntries(entries.map(([key, nested]) => [key, resolveValue(nested, context)]));
  }
  const [[name, argument]] = entries;
  switch (name) {
    case 'Ref':
      return resolveRef(String(argument), context);
    case 'Fn::GetAtt': {
      const [logicalId, attribute] = Array.isArray(argument) ? argument : String(argument).split('.');
      const attributes = context.resources.get(String(logicalId))?.attributes;
      const resolved = attributes?.[String(attribute)];
      if (resolved === undefined) {
        throw new UnresolvableValueError(
          `Fn::GetAtt ${logicalId}.${attribute}: not a resource the sandbox emulates`,
        );
      }
      return resolved;
    }
    case 'Fn::Join': {
      const [separator, parts] = argument as [string, unknown[]];
      return (resolveValue(parts, context) as unknown[]).join(separator);
    }
    case 'Fn::ImportValue': {
      const exportName = String(resolveValue(argument, context));
      const imported = context.exports.get(exportName);
      if (imported === undefined) {
        throw new UnresolvableValueError(`Fn::ImportValue ${exportName}: no stack of the app exports it`);
      }
      return imported;
    }
    case 'Fn::Select': {
      const [index, list] = argument as [number | string, unknown];
      return (resolveValue(list, context) as unknown[])[Number(index)];
    }
    default:
      if (name.startsWith('Fn::'))
        throw new UnresolvableValueError(`${name} is not supported by the sandbox`);
      return { [name]: resolveValue(argument, context) };
  }
}

function resolveRef(name: string, context: ResolveContext): string {
  const pseudo: Record<string, string> = {
    'AWS::Region': context.region,
    'AWS::AccountId': context.accountId,
    'AWS::Partition': 'aws',
    'AWS::StackName': context.stackName,
    'AWS::URLSuffix': 'amazonaws.com',
  };
  const resolved = pseudo[name] ?? context.resources.get(name)?.ref;
  if (resolved === undefined)
    throw new UnresolvableValueError(`Ref ${name}: not a resource the sandbox emulates`);
  return resolved;
}
