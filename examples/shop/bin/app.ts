/** The CDK app (`npm run synth`, `npx cdk deploy`); see lib/oncely-app.ts. */
import { buildOncelyApp } from '../lib/oncely-app.js';

buildOncelyApp();
