import type { TemplateResource } from './cloudformation.js';
import { UnresolvableValueError } from './cloudformation.js';

/** An EventBridge schedule rule of the template, to be run by a local schedule runner. */
export interface LocalSchedule {
  logicalId: string;
  name: string;
  arn: string;
  /** The rule's `ScheduleExpression`, e.g. `rate(5 minutes)`. */
  expression: string;
  intervalMs: number;
  /** The functions it invokes, by name. */
  functionNames: string[];
}

/** What the template's rules amount to locally. */
export interface ScheduleRules {
  schedules: LocalSchedule[];
  /** Rules and Lambda permissions the schedules account for: emulated, not merely listed. */
  handled: Set<string>;
  /** Rules the sandbox does not run, by logical id, with the reason. */
  notRun: Map<string, string>;
}

export interface ScheduleRulesInput {
  rules: [string, TemplateResource][];
  permissions: [string, TemplateResource][];
  /** The functions that run locally. */
  functions: readonly { name: string; arn: string }[];
  /** Resolves against the provisioned resources; rules must already be registered (`Ref`, `Arn`). */
  resolve: <T>(value: unknown) => T;
}

const EVENTBRIDGE_PRINCIPAL = 'events.amazonaws.com';
const RATE = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/;
const UNIT_MS: Record<string, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** The interval of a `rate(N unit)` expression in ms; undefined for anything else (cron). */
export function rateIntervalMs(expression: string): number | undefined {
  const match = RATE.exec(expression);
  if (!match || Number(match[1]) < 1) return undefined;
  return Number(match[1]) * UNIT_MS[match[2].replace(/s$/, '')];
}

/**
 * Reads the template's EventBridge rules: a rule runs locally when it is enabled, has a rate
 * schedule, and each target is a function of the stack that a Lambda permission lets EventBridge
 * invoke from this rule (without one, AWS's invocations fail too). Anything else is reported.
 */
export function describeScheduleRules({
  rules,
  permissions,
  functions,
  resolve,
}: ScheduleRulesInput): ScheduleRules {
  const tryResolve = (value: unknown): unknown => {
    try {
      return resolve(value);
    } catch (error) {
      if (error instanceof UnresolvableValueError) return undefined;
      throw error;
    }
  };
  const eventBridgePermissions = permissions
    .filter(([, permission]) => permission.Properties?.Principal === EVENTBRIDGE_PRINCIPAL)
    .map(([logicalId, permission]) => ({
      logicalId,
      action: permission.Properties?.Action,
      functionName: tryResolve(permission.Properties?.FunctionName),
      sourceArn: tryResolve(permission.Properties?.SourceArn),
    }));

  const result: ScheduleRules = { schedules: [], handled: new Set(), notRun: new Map() };
  for (const [logicalId, rule] of rules) {
    const properties = rule.Properties ?? {};
    // A disabled rule never runs on AWS either: fully accounted for.
    if (properties.State === 'DISABLED') {
      result.handled.add(logicalId);
      continue;
    }
    const expression = properties.ScheduleExpression;
    if (typeof expression !== 'string') {
      result.notRun.set(
        logicalId,
        'event-pattern rules are not emulated; only rate(...) schedules run locally',
      );
      continue;
    }
    const intervalMs = rateIntervalMs(expression);
    if (intervalMs === undefined) {
      result.notRun.set(logicalId, `${expression} is not emulated; only rate(...) schedules run locally`);
      continue;
    }
    const arn = resolve<string>({ 'Fn::GetAtt': [logicalId, 'Arn'] });
    const problems: string[] = [];
    const functionNames: string[] = [];
    const permissionIds: string[] = [];
    for (const target of (properties.Targets ?? []) as Record<string, unknown>[]) {
      const fn = functions.find((candidate) => candidate.arn === tryResolve(target.Arn));
      if (!fn) {
        problems.push(`target ${target.Id} is not a function of this stack that runs locally`);
      } else if (target.Input ?? target.InputPath ?? target.InputTransformer) {
        problems.push(`target ${target.Id} has a custom input, which is not emulated`);
      } else {
        const permission = eventBridgePermissions.find(
          (p) =>
            p.action === 'lambda:InvokeFunction' &&
            (p.functionName === fn.arn || p.functionName === fn.name) &&
            p.sourceArn === arn,
        );
        if (permission) {
          functionNames.push(fn.name);
          permissionIds.push(permission.logicalId);
        } else {
          problems.push(
            `no AWS::Lambda::Permission lets EventBridge invoke ${fn.name} from this rule, so on AWS its invocations fail`,
          );
        }
      }
    }
    if (problems.length > 0) {
      result.notRun.set(logicalId, problems.join('; '));
      continue;
    }
    const name = resolve<string>({ Ref: logicalId });
    result.schedules.push({ logicalId, name, arn, expression, intervalMs, functionNames });
    for (const id of [logicalId, ...permissionIds]) result.handled.add(id);
  }
  return result;
}
