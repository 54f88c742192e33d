/** The shop's CDK app (`npx cdk synth|deploy` here, and `npx oncely local`); see lib/shop-app.ts. */
import { buildShopApp } from '../lib/shop/shop-app.js';

buildShopApp();
