import { type AsyncInvokeConfig, DEFAULT_ASYNC_INVOKE_CONFIG } from './async-invocation.js';
import { type TemplateResource, UnresolvableValueError } from './cloudformation.js';

export interface EventInvokeConfigsInput {
  /** The template's `AWS::Lambda::EventInvokeConfig` resources. */
  configs: [string, TemplateResource][];
  /** The functions that run locally. */
  functions: readonly { name: string; arn: string }[];
  resolve: <T>(value: unknown) => T;
}

export interface EventInvokeConfigs {
  /** Each configured function's asynchronous error handling, by function name. */
  byFunction: Map<string, AsyncInvokeConfig>;
  /** The configs applied in full: emulated, not merely listed. */
  handled: Set<string>;
  /** Configs with no or only part of their effect locally, by logical id, with the reason. */
  notRun: Map<string, string>;
}

/**
 * Reads the template's asynchronous-invocation configs (CDK's `retryAttempts`, `maxEventAge`,
 * `onFailure`, `onSuccess` on a function): their retries and maximum age apply to the function's
 * asynchronous invocations, with Lambda's defaults for what they leave out. Only `$LATEST` runs
 * locally; destinations are not emulated, and said so.
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-lambda-eventinvokeconfig.html
 */
export function describeEventInvokeConfigs({
  configs,
  functions,
  resolve,
}: EventInvokeConfigsInput): EventInvokeConfigs {
  const result: EventInvokeConfigs = { byFunction: new Map(), handled: new Set(), notRun: new Map() };
  for (const [logicalId, resource] of configs) {
    const properties = resource.Properties ?? {};
    const setting = <T>(name: string): T | undefined =>
      properties[name] === undefined ? undefined : resolve<T>(properties[name]);
    let reference: string | undefined;
    try {
      reference = setting<string>('FunctionName');
    } catch (error) {
      if (!(error instanceof UnresolvableValueError)) throw error;
    }
    const fn = functions.find(
      (candidate) =>
        candidate.name === reference ||
        candidate.arn === reference ||
        reference?.endsWith(`:function:${candidate.name}`),
    );
    if (!fn) {
      result.notRun.set(logicalId, `its function ${reference ?? '(unresolved)'} does not run locally`);
      continue;
    }
    const qualifier = setting<string>('Qualifier');
    if (qualifier !== '$LATEST') {
      result.notRun.set(logicalId, `it configures ${fn.name}:${qualifier}; only $LATEST runs locally`);
      continue;
    }
    const retries = setting<number | string>('MaximumRetryAttempts');
    const maximumAge = setting<number | string>('MaximumEventAgeInSeconds');
    result.byFunction.set(fn.name, {
      maximumRetryAttempts:
        retries === undefined ? DEFAULT_ASYNC_INVOKE_CONFIG.maximumRetryAttempts : Number(retries),
      maximumEventAgeSeconds:
        maximumAge === undefined ? DEFAULT_ASYNC_INVOKE_CONFIG.maximumEventAgeSeconds : Number(maximumAge),
    });
    if (properties.DestinationConfig !== undefined) {
      result.notRun.set(
        logicalId,
        'its destinations are not emulated (its retries and maximum event age are): nothing is sent to them',
      );
    } else {
      result.handled.add(logicalId);
    }
  }
  return result;
}
