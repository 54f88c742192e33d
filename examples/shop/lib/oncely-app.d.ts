import { App, type AppProps } from 'aws-cdk-lib';
import { OncelyStack } from './oncely-stack.js';
/**
 * The app both `cdk deploy` and the local sandbox synthesise: one stack per stage, configured by
 * context, with cdk-nag's AWS Solutions checks failing the synth on any finding. Sharing it is
 * what keeps the local and the deployed topology from drifting apart.
 */
export declare function buildOncelyApp(props?: AppProps): {
    app: App;
    stack: OncelyStack;
};
