import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { pipelinePropsFromContext } from './context-props.js';
import { OncelyStack } from './oncely-stack.js';
/**
 * The app both `cdk deploy` and the local sandbox synthesise: one stack per stage, configured by
 * context, with cdk-nag's AWS Solutions checks failing the synth on any finding. Sharing it is
 * what keeps the local and the deployed topology from drifting apart.
 */
export function buildOncelyApp(props = {}) {
    const app = new App(props);
    const stage = String(app.node.tryGetContext('stage') ?? 'dev');
    const stack = new OncelyStack(app, `Oncely-${stage}`, {
        pipeline: pipelinePropsFromContext((key) => app.node.tryGetContext(key), stage),
        description: `Oncely effectively-once event pipeline (${stage})`,
    });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    return { app, stack };
}
//# sourceMappingURL=oncely-app.js.map