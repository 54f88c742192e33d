import { Template } from 'aws-cdk-lib/assertions';
import { CONSUMER_ENVIRONMENT, OncelyConfigurationError } from 'oncely/consumer';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  DEFAULT_NOTIFICATION_TIMEOUT_MS,
  readShopConfig,
  SHOP_ENVIRONMENT,
} from '../../lambdas/shop/consumer/environment.js';
import { handler } from '../../lambdas/shop/consumer/handler.js';
import { buildShopApp } from '../../lib/shop/shop-app.js';
import { lambdaContext } from '../support/lambda-context.js';

const LEDGER_TABLE_NAME = SHOP_ENVIRONMENT.ledgerTableName;

const complete = { LEDGER_TABLE_NAME: 'shop-ledger', NOTIFICATION_URL: 'http://127.0.0.1:8025/send' };

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the shop consumer’s environment', () => {
  it('names every variable of its own that its stack sets on the consumer, and the required ones are set', () => {
    const { stack } = buildShopApp({ context: { 'aws:cdk:bundling-stacks': [] } });
    const consumer = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')).find(
      (fn) => LEDGER_TABLE_NAME in (fn.Properties.Environment?.Variables ?? {}),
    );
    const set = Object.keys(consumer?.Properties.Environment.Variables ?? {});
    const shopVariables = set.filter((name) => !Object.values<string>(CONSUMER_ENVIRONMENT).includes(name));
    const known = [
      ...Object.values<string>(SHOP_ENVIRONMENT),
      'NODE_OPTIONS',
      'POWERTOOLS_SERVICE_NAME',
      'POWERTOOLS_METRICS_NAMESPACE',
      'ONCELY_PIPELINE', // the metrics' pipeline dimension, which the pipeline's alarms select
    ];
    expect(shopVariables.filter((name) => !known.includes(name))).toEqual([]);
    expect(set).toEqual(
      expect.arrayContaining([SHOP_ENVIRONMENT.ledgerTableName, SHOP_ENVIRONMENT.notificationUrl]),
    );
  });

  it('reads the required variables and defaults the optional ones', () => {
    expect(readShopConfig(complete)).toEqual({
      ledgerTableName: 'shop-ledger',
      notificationUrl: 'http://127.0.0.1:8025/send',
      notificationTimeoutMs: DEFAULT_NOTIFICATION_TIMEOUT_MS,
      notificationMode: 'at-most-once',
    });
    expect(
      readShopConfig({
        ...complete,
        NOTIFICATION_TIMEOUT_MS: '800',
        NOTIFICATION_MODE: 'at-least-once',
      }),
    ).toMatchObject({ notificationTimeoutMs: 800, notificationMode: 'at-least-once' });
  });

  it('names every missing or invalid variable at once', () => {
    const read = () => readShopConfig({ NOTIFICATION_URL: 'ftp://x', NOTIFICATION_TIMEOUT_MS: '-1' });
    expect(read).toThrow(OncelyConfigurationError);
    expect(read).toThrow(
      expect.objectContaining({
        sources: ['LEDGER_TABLE_NAME', 'NOTIFICATION_URL', 'NOTIFICATION_TIMEOUT_MS'],
      }),
    );
    expect(read).toThrow(
      /LEDGER_TABLE_NAME is not set.*NOTIFICATION_URL must be an http\(s\) URL.*NOTIFICATION_TIMEOUT_MS must be positive/,
    );
  });

  it('fails the first invocation, not the import, when the environment is incomplete', async () => {
    for (const name of Object.values(SHOP_ENVIRONMENT)) vi.stubEnv(name, undefined);
    await expect(handler({ Records: [] }, lambdaContext())).rejects.toThrow(OncelyConfigurationError);
  });
});
