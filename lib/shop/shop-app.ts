import { App, type AppProps, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { shopSettingsFromContext } from './shop-settings.js';
import { ShopStack } from './shop-stack.js';

/**
 * The app `cdk deploy` deploys and `oncely local` runs: one stack per stage, configured by context,
 * with cdk-nag's AWS Solutions checks failing the synth on any finding. `-c queueType=standard`
 * makes it the standard-queue shop, named apart (`Shop-<stage>-standard`) so that both can be
 * deployed side by side; `-c leaseRecords=valkey` keeps the consumer's lease records in a Valkey
 * cache, named apart too (`…-valkey`).
 */
export function buildShopApp(props: AppProps = {}): { app: App; stack: ShopStack } {
  const app = new App(props);
  const settings = shopSettingsFromContext((key) => app.node.tryGetContext(key));
  const suffix =
    (settings.pipeline.queueType === 'standard' ? '-standard' : '') +
    (settings.leaseRecords === 'valkey' ? '-valkey' : '');
  const stack = new ShopStack(app, `Shop-${settings.stage}${suffix}`, {
    settings,
    description: `Oncely example shop (${settings.stage}${suffix})`,
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
}
