/**
 * The CDK app (`npm run synth`, `npx cdk deploy`): one Oncely stack per stage, configured by
 * context, with cdk-nag's AWS Solutions checks failing synth on any unacknowledged finding.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { pipelinePropsFromContext } from '../lib/context-props';
import { OncelyStack } from '../lib/oncely-stack';

const app = new App();
const stage = String(app.node.tryGetContext('stage') ?? 'dev');
new OncelyStack(app, `Oncely-${stage}`, {
  pipeline: pipelinePropsFromContext((key) => app.node.tryGetContext(key), stage),
  description: `Oncely effectively-once event pipeline (${stage})`,
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
