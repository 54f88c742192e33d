import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { PipelineConfigurationError } from '../../../src/cdk/pipeline-settings.js';
/** Until you point it at your gateway, notifications fail as retryable and end in the DLQ. */
export const PLACEHOLDER_NOTIFICATION_URL = 'https://notifications.invalid/send';
/**
 * Builds the pipeline's props from CDK context (strings from the command line, or values from
 * cdk.json). A `prod` stage retains its data and turns deletion protection on; other stages are
 * torn down with the stack.
 */
export function pipelinePropsFromContext(get, stage) {
    const number = (key) => {
        const raw = get(key);
        if (raw === undefined)
            return undefined;
        const value = Number(raw);
        if (!Number.isFinite(value)) {
            throw new PipelineConfigurationError(`Context value ${key} must be a number, got ${JSON.stringify(raw)}.`);
        }
        return value;
    };
    const duration = (key, unit) => {
        const value = number(key);
        return value === undefined ? undefined : unit(value);
    };
    const mode = get('notificationMode');
    if (mode !== undefined && mode !== 'at-most-once' && mode !== 'at-least-once') {
        throw new PipelineConfigurationError(`Context value notificationMode must be at-most-once or at-least-once, got ${JSON.stringify(mode)}.`);
    }
    const production = stage === 'prod';
    return {
        notificationUrl: String(get('notificationUrl') ?? PLACEHOLDER_NOTIFICATION_URL),
        notificationMode: mode,
        maxReceiveCount: number('maxReceiveCount'),
        consumerTimeout: duration('consumerTimeoutSeconds', Duration.seconds),
        consumerMemoryMiB: number('consumerMemoryMiB'),
        batchSize: number('batchSize'),
        maxConcurrency: number('maxConcurrency'),
        maxConcurrentGroups: number('maxConcurrentGroups'),
        queueRetention: duration('queueRetentionDays', Duration.days),
        dlqRetention: duration('dlqRetentionDays', Duration.days),
        idempotencyTtl: duration('idempotencyTtlDays', Duration.days),
        maxMessageSizeBytes: number('maxMessageSizeBytes'),
        unresolvedCheckInterval: duration('unresolvedCheckIntervalMinutes', Duration.minutes),
        removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
        deletionProtection: production,
    };
}
//# sourceMappingURL=context-props.js.map