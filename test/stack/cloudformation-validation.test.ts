import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildShopApp } from '../../lib/shop/shop-app.js';

// The suite's other syntheses skip aws-cdk-lib's CloudFormation schema check (CDK_VALIDATION=false
// in vitest.config.ts: about 4 s each). Here it runs, made strict: a template property CloudFormation
// would refuse fails the synthesis, as it fails `cdk deploy`.

const outdirs: string[] = [];
afterEach(() => {
  vi.unstubAllEnvs();
  for (const outdir of outdirs.splice(0)) rmSync(outdir, { recursive: true, force: true });
});

describe("the shop's templates, checked against CloudFormation's schemas", () => {
  it.each(['fifo', 'standard'])('the %s pipeline, its outbox and the orders service pass', (queueType) => {
    vi.stubEnv('CDK_VALIDATION', 'true');
    const outdir = mkdtempSync(join(tmpdir(), 'oncely-validate-'));
    outdirs.push(outdir);
    const { app } = buildShopApp({
      outdir,
      context: {
        queueType,
        'aws:cdk:bundling-stacks': [],
        '@aws-cdk/core:validateAgainstDefaultRules': true,
      },
    });

    app.synth();

    const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8'));
    const violations = report.pluginReports.flatMap(
      (plugin: { violations?: unknown[] }) => plugin.violations ?? [],
    );
    expect(violations).toEqual([]);
  });

  it('would fail on a property CloudFormation refuses (the check is on)', async () => {
    vi.stubEnv('CDK_VALIDATION', 'true');
    const { App, Stack, aws_sqs } = await import('aws-cdk-lib');
    const outdir = mkdtempSync(join(tmpdir(), 'oncely-validate-'));
    outdirs.push(outdir);
    const app = new App({ outdir, context: { '@aws-cdk/core:validateAgainstDefaultRules': true } });
    new aws_sqs.CfnQueue(new Stack(app, 'Broken'), 'Queue', { visibilityTimeout: 43_201 });

    expect(() => app.synth()).toThrow(/VisibilityTimeout: 43201 is greater than the maximum/);
  });
});
