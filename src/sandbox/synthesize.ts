import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOncelyApp } from '../../examples/shop/lib/oncely-app.js';
import type { CloudFormationTemplate } from './cloudformation.js';

/**
 * Synthesises the same app `cdk deploy` deploys, in-process and without bundling the Lambdas
 * (the sandbox runs their TypeScript directly), and returns the stack's template.
 */
export function synthesizeTemplate(context: Record<string, unknown> = {}): {
  stackName: string;
  template: CloudFormationTemplate;
} {
  const outdir = mkdtempSync(join(tmpdir(), 'oncely-synth-'));
  try {
    const { app, stack } = buildOncelyApp({ outdir, context: { ...context, 'aws:cdk:bundling-stacks': [] } });
    const artifact = app.synth().getStackByName(stack.stackName);
    return { stackName: stack.stackName, template: artifact.template as CloudFormationTemplate };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
