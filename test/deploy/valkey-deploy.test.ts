import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ListStacksCommand } from '@aws-sdk/client-cloudformation';
import { ListRolePoliciesCommand, ListRolesCommand } from '@aws-sdk/client-iam';
import { ListFunctionsCommand } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, awsEnvironment, cdk, REGION } from './cdk-cli.js';
import { EXPLAINED_WARNINGS } from './cfn-lint-explained.js';
import { type AwsClients, awsClients, destroyClients } from './deployed-stack.js';
import { type Moto, startMoto } from './moto.js';

// `leaseRecords: 'valkey'` against moto, as far as moto goes (docs/construct.md, "The deploy
// test"). Moto 5.2's CloudFormation has no model for AWS::ElastiCache::ServerlessCache, ::User or
// ::UserGroup: it skips them, and CreateStack fails at the first resource that reads the cache's
// attributes. This records exactly where, and what exists by then; it fakes nothing. Run alone:
// `npx vitest run --config vitest.deploy.config.ts test/deploy/valkey-deploy.test.ts`.

const ROOT = join(import.meta.dirname, '..', '..');
const STACK = 'ValkeyLeases';
const APP = 'npx tsx test/deploy/apps/valkey-leases.ts';

let moto: Moto;
let env: NodeJS.ProcessEnv;
let clients: AwsClients;
let output: string;

beforeAll(async () => {
  moto = await startMoto();
  env = awsEnvironment(moto.endpoint);
  clients = awsClients(moto.endpoint);
  output = mkdtempSync(join(tmpdir(), 'oncely-valkey-deploy-'));
});

afterAll(async () => {
  if (clients) destroyClients(clients);
  await moto?.stop();
  if (output) rmSync(output, { recursive: true, force: true });
});

/** What EC2's query API answers moto for `action`: moto reads the region from the credential scope, not the signature. */
async function ec2(action: string): Promise<string> {
  const response = await fetch(`${moto.endpoint}/?Action=${action}&Version=2016-11-15`, {
    headers: {
      authorization: `AWS4-HMAC-SHA256 Credential=testing/20260101/${REGION}/ec2/aws4_request, SignedHeaders=host, Signature=0`,
    },
  });
  return response.text();
}

describe("leaseRecords: 'valkey' against moto", () => {
  it('stops at the first resource reading the cache, which moto does not create', {
    timeout: 600_000,
  }, async () => {
    await cdk(ROOT, env, ['bootstrap', `aws://${ACCOUNT}/${REGION}`]);
    const deploy = cdk(ROOT, env, [
      'deploy',
      STACK,
      '--app',
      APP,
      '--output',
      output,
      '--require-approval',
      'never',
      '--method',
      'direct',
    ]);
    // The consumer role's policy reads the cache's ARN (`Fn::GetAtt`), and the cache was skipped.
    await expect(deploy).rejects.toThrow(
      /Template error: instance of Fn::GetAtt references undefined resource PipelineLeaseRecordsCache[0-9A-F]{8}/,
    );

    // Moto left the stack half made: listed as in progress, with what it created before.
    const { StackSummaries = [] } = await clients.cloudformation.send(new ListStacksCommand({}));
    expect(StackSummaries.find((stack) => stack.StackName === STACK)?.StackStatus).toBe('CREATE_IN_PROGRESS');

    // The network is real moto resources: the VPC's isolated subnets, the three security groups, both endpoints.
    expect((await ec2('DescribeSubnets')).match(/<cidrBlock>10\.0\.[01]\.0\/24/g)).toHaveLength(2);
    const groups = await ec2('DescribeSecurityGroups');
    for (const description of [
      'The lease records cache',
      'The SQS endpoint',
      'The Oncely consumer: reaches',
    ]) {
      expect(groups).toContain(description);
    }
    const endpoints = await ec2('DescribeVpcEndpoints');
    expect(endpoints).toContain(`com.amazonaws.${REGION}.dynamodb`);
    expect(endpoints).toContain(`com.amazonaws.${REGION}.sqs`);

    // The consumer's role exists without its policy, and the consumer was never created.
    const { Roles = [] } = await clients.iam.send(new ListRolesCommand({}));
    const consumerRole = Roles.find((role) => role.RoleName?.startsWith(`${STACK}-PipelineConsumerRole`));
    expect(consumerRole).toBeDefined();
    const { PolicyNames } = await clients.iam.send(
      new ListRolePoliciesCommand({ RoleName: consumerRole?.RoleName }),
    );
    expect(PolicyNames).toEqual([]);
    const { Functions = [] } = await clients.lambda.send(new ListFunctionsCommand({}));
    const names = Functions.map((fn) => fn.FunctionName ?? '');
    expect(names.some((name) => name.startsWith(`${STACK}-PipelineConsumer`))).toBe(false);
  });

  it("bundled the Valkey store into the consumer's asset only (the construct's esbuild inject)", () => {
    const template = JSON.parse(readFileSync(join(output, `${STACK}.template.json`), 'utf8')) as {
      Resources: Record<string, { Type: string; Metadata?: Record<string, string> }>;
    };
    const code = (prefix: string) => {
      const [, resource] = Object.entries(template.Resources).find(
        ([id, { Type }]) => Type === 'AWS::Lambda::Function' && id.startsWith(prefix),
      ) ?? ['', undefined];
      const asset = resource?.Metadata?.['aws:asset:path'] as string;
      return readFileSync(join(output, asset, 'index.mjs'), 'utf8');
    };
    // The token's request and the store's scripts.
    for (const mark of [/ResourceType/, /redis\.call/]) {
      expect(code('PipelineConsumer')).toMatch(mark);
      expect(code('PipelinePublisher')).not.toMatch(mark);
    }
  });

  it('is a template cfn-lint finds no error in, and only warnings cfn-lint-explained.ts explains', async () => {
    // The template the deploy above synthesised.
    const template = join(output, `${STACK}.template.json`);
    const { stdout } = await promisify(execFile)('cfn-lint', ['--format', 'json', template], {
      maxBuffer: 1 << 24,
    }).catch((error: { stdout?: string; code?: unknown; message: string }) => {
      if (typeof error.code !== 'number' || !error.stdout) {
        throw new Error(`cfn-lint could not run (install it: \`pip install cfn-lint\`): ${error.message}`);
      }
      return { stdout: error.stdout };
    });
    const findings: { Level: string; Message: string; Rule: { Id: string } }[] = JSON.parse(stdout || '[]');
    const show = (finding: (typeof findings)[number]) => `${finding.Rule.Id}: ${finding.Message}`;
    expect(findings.filter((finding) => finding.Level === 'Error').map(show)).toEqual([]);
    expect(
      findings
        .filter((finding) => finding.Level === 'Warning' && !(finding.Rule.Id in EXPLAINED_WARNINGS))
        .map(show),
    ).toEqual([]);
  });
});
