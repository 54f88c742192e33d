import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import { CONSUMER_ENVIRONMENT } from '../../lambdas/consumer/environment.js';
import { MONITOR_ENVIRONMENT } from '../../lambdas/monitor/environment.js';
import { lambdaBuildOptions, lambdaBundleFile, lambdaBundling } from '../../lib/constructs/bundling.js';
import { OncelyPipeline, type OncelyPipelineProps } from '../../lib/constructs/oncely-pipeline.js';
import { packageEntry } from '../../lib/constructs/package-entries.js';
import { PIPELINE_CACHE_OUTPUTS } from '../../lib/constructs/pipeline-outputs.js';
import { VALKEY_ACCESS_STRING } from '../../lib/constructs/valkey-lease-cache.js';
import { buildStack, FIXTURE_CONSUMER } from './build-stack.js';

// Issue 46, part 3: `leaseRecords: 'valkey'` provisions an ElastiCache Serverless cache for Valkey
// and places the consumer beside it, reaching AWS through endpoints rather than a NAT gateway.
const { app, stack, template, pipeline } = buildStack({ leaseRecords: 'valkey' });
const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

const only = (type: string) => {
  const found = Object.entries(template.findResources(type));
  expect(found).toHaveLength(1);
  return found[0] as [string, { Properties: Record<string, unknown> }];
};
const idOf = (type: string) => only(type)[0];
const groupId = (logicalId: string) => ({ 'Fn::GetAtt': [logicalId, 'GroupId'] });
const securityGroupOf = (description: RegExp) => {
  const [found] = Object.entries(template.findResources('AWS::EC2::SecurityGroup')).filter(([, group]) =>
    description.test(group.Properties.GroupDescription),
  );
  return found as [string, { Properties: Record<string, unknown> }];
};
const pipelineFunction = (prefix: string) => {
  const [, fn] = Object.entries(template.findResources('AWS::Lambda::Function')).find(([id]) =>
    id.startsWith(prefix),
  ) as [string, { Properties: { VpcConfig: unknown; Environment: { Variables: Record<string, unknown> } } }];
  return fn.Properties;
};
const consumerFunction = () => pipelineFunction('PipelineConsumer');
const monitorFunction = () => pipelineFunction('PipelineMonitor');

describe('the cache', () => {
  it('is a serverless Valkey cache in the private subnets, behind its own security group', () => {
    const [, cache] = only('AWS::ElastiCache::ServerlessCache');
    const [cacheGroupId] = securityGroupOf(/^The lease records cache/);
    expect(cache.Properties).toMatchObject({
      Engine: 'valkey',
      ServerlessCacheName: pipeline.leaseRecordsCache?.cacheName,
      SecurityGroupIds: [groupId(cacheGroupId)],
      UserGroupId: { Ref: idOf('AWS::ElastiCache::UserGroup') },
    });
    const isolated = Object.keys(template.findResources('AWS::EC2::Subnet'));
    expect(isolated).toHaveLength(2);
    expect(cache.Properties.SubnetIds).toEqual(isolated.map((id) => ({ Ref: id })));
    expect(pipeline.leaseRecordsCache?.cacheName).toMatch(/^[a-z][a-z0-9-]{0,39}$/);
  });

  it("is encrypted at rest with the pipeline's encryptionKey when it has one, else an AWS-owned key", () => {
    expect(only('AWS::ElastiCache::ServerlessCache')[1].Properties.KmsKeyId).toBeUndefined();
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const own = new Stack(app, 'Keyed');
    const key = new Key(own, 'Key');
    new OncelyPipeline(own, 'Pipeline', {
      consumer: { entry: FIXTURE_CONSUMER },
      leaseRecords: 'valkey',
      encryptionKey: key,
    });
    Template.fromStack(own).hasResourceProperties('AWS::ElastiCache::ServerlessCache', {
      KmsKeyId: { 'Fn::GetAtt': [own.getLogicalId(key.node.defaultChild as CfnElement), 'Arn'] },
    });
  });

  it('authenticates one IAM user, in the group attached to the cache', () => {
    const [userId, user] = only('AWS::ElastiCache::User');
    expect(user.Properties).toEqual({
      Engine: 'valkey',
      UserId: pipeline.leaseRecordsCache?.userId,
      UserName: pipeline.leaseRecordsCache?.userId,
      AuthenticationMode: { Type: 'iam' },
      AccessString: VALKEY_ACCESS_STRING,
    });
    const [, group] = only('AWS::ElastiCache::UserGroup');
    expect(group.Properties).toMatchObject({ Engine: 'valkey', UserIds: [{ Ref: userId }] });
  });

  it("admits TCP 6379-6380 from the consumer's security group, and nothing else", () => {
    const [, cacheGroup] = securityGroupOf(/^The lease records cache/);
    const [consumerGroupId] = securityGroupOf(/Oncely consumer: reaches/);
    expect(cacheGroup.Properties.SecurityGroupIngress).toEqual([
      expect.objectContaining({
        IpProtocol: 'tcp',
        FromPort: 6379,
        ToPort: 6380,
        SourceSecurityGroupId: groupId(consumerGroupId),
      }),
    ]);
    // The standalone ingress rules: only the SQS endpoint's, below.
    const rules = Object.values(template.findResources('AWS::EC2::SecurityGroupIngress'));
    expect(rules.map((rule) => rule.Properties.SourceSecurityGroupId)).toEqual([groupId(consumerGroupId)]);
  });
});

describe('ElastiCache names (AWS refuses what breaks its rules: moto and cfn-lint do not check them)', () => {
  it('are distinct for two pipelines in one stack, and valid whatever the stack and construct names', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const own = new Stack(app, 'A-Very-Long-Stack-Name-For-A-Team-That-Likes-Long-Names');
    const names = ['9Orders', 'Payments_Of_The_Whole_Company_Including_Refunds'].flatMap((id) => {
      const cache = new OncelyPipeline(own, id, {
        consumer: { entry: FIXTURE_CONSUMER },
        leaseRecords: 'valkey',
        outputPrefix: id.replace(/_/g, ''),
        vpcEndpoints: id === '9Orders',
      }).leaseRecordsCache;
      return [cache?.cacheName, cache?.userId];
    });
    const groups = Object.values(Template.fromStack(own).findResources('AWS::ElastiCache::UserGroup')).map(
      (group) => group.Properties.UserGroupId as string,
    );
    // Lowercase letters, digits and single hyphens, starting with a letter, at most 40 characters.
    for (const name of [...names, ...groups]) expect(name).toMatch(/^(?!.*--)[a-z][a-z0-9-]{0,38}[a-z0-9]$/);
    expect(new Set([...names, ...groups]).size).toBe(6);
  });
});

describe('the network', () => {
  it('is a new VPC of 2 AZs, isolated subnets only: no internet gateway, no NAT gateway', () => {
    template.resourceCountIs('AWS::EC2::VPC', 1);
    template.resourceCountIs('AWS::EC2::NatGateway', 0);
    template.resourceCountIs('AWS::EC2::InternetGateway', 0);
    template.resourceCountIs('AWS::EC2::Route', 0);
  });

  it('puts the consumer in the private subnets with its own security group', () => {
    const [consumerGroupId] = securityGroupOf(/Oncely consumer: reaches/);
    const subnets = Object.keys(template.findResources('AWS::EC2::Subnet')).map((id) => ({ Ref: id }));
    expect(consumerFunction().VpcConfig).toEqual({
      SecurityGroupIds: [groupId(consumerGroupId)],
      SubnetIds: subnets,
    });
  });

  it("reaches DynamoDB through a gateway endpoint, SQS through an interface endpoint admitting the consumer's group only", () => {
    const endpoints = Object.values(template.findResources('AWS::EC2::VPCEndpoint')).map((e) => e.Properties);
    expect(endpoints.map((e) => [e.VpcEndpointType, e.ServiceName['Fn::Join'][1][2]]).sort()).toEqual([
      ['Gateway', '.dynamodb'],
      ['Interface', '.sqs'],
    ]);
    const sqs = endpoints.find((e) => e.VpcEndpointType === 'Interface');
    const [endpointGroupId, endpointGroup] = securityGroupOf(/SQS endpoint/);
    const [consumerGroupId] = securityGroupOf(/Oncely consumer: reaches/);
    expect(sqs).toMatchObject({ PrivateDnsEnabled: true, SecurityGroupIds: [groupId(endpointGroupId)] });
    expect(endpointGroup.Properties.SecurityGroupIngress).toBeUndefined();
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      GroupId: groupId(endpointGroupId),
      IpProtocol: 'tcp',
      FromPort: 443,
      ToPort: 443,
      SourceSecurityGroupId: groupId(consumerGroupId),
    });
  });

  it('uses your VPC, and adds no endpoints with vpcEndpoints: false', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const own = new Stack(app, 'Own');
    const vpc = new Vpc(own, 'Mine', {
      maxAzs: 3,
      subnetConfiguration: [
        { name: 'Public', subnetType: SubnetType.PUBLIC },
        { name: 'App', subnetType: SubnetType.PRIVATE_WITH_EGRESS },
      ],
    });
    new OncelyPipeline(own, 'Pipeline', {
      consumer: { entry: FIXTURE_CONSUMER },
      leaseRecords: 'valkey',
      vpc,
      vpcEndpoints: false,
    });
    const mine = Template.fromStack(own);
    mine.resourceCountIs('AWS::EC2::VPC', 1);
    mine.resourceCountIs('AWS::EC2::VPCEndpoint', 0);
    const cache = Object.values(mine.findResources('AWS::ElastiCache::ServerlessCache'))[0];
    // An environment-agnostic stack sees 2 AZs, whatever maxAzs says.
    expect(cache?.Properties.SubnetIds).toHaveLength(2);
    expect(JSON.stringify(cache?.Properties.SubnetIds)).toMatch(/MineAppSubnet/);
  });
});

describe('the consumer', () => {
  it("is told the cache's endpoint, its user and its name, and keeps the table for transactional records", () => {
    const variables = consumerFunction().Environment.Variables;
    const [cacheId] = only('AWS::ElastiCache::ServerlessCache');
    expect(variables).toMatchObject({
      [CONSUMER_ENVIRONMENT.valkeyEndpoint]: {
        'Fn::Join': [
          '',
          [
            { 'Fn::GetAtt': [cacheId, 'Endpoint.Address'] },
            ':',
            { 'Fn::GetAtt': [cacheId, 'Endpoint.Port'] },
          ],
        ],
      },
      [CONSUMER_ENVIRONMENT.valkeyUserId]: pipeline.leaseRecordsCache?.userId,
      [CONSUMER_ENVIRONMENT.valkeyCacheName]: pipeline.leaseRecordsCache?.cacheName,
      [CONSUMER_ENVIRONMENT.idempotencyTableName]: {
        Ref: expect.stringMatching(/^PipelineIdempotencyTable/),
      },
    });
  });

  it('may connect to the cache as its user only: elasticache:Connect on the two ARNs', () => {
    const [cacheId] = only('AWS::ElastiCache::ServerlessCache');
    const connect = {
      Effect: 'Allow',
      Action: 'elasticache:Connect',
      Resource: [
        { 'Fn::GetAtt': [cacheId, 'ARN'] },
        {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':elasticache:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              `:user:${pipeline.leaseRecordsCache?.userId}`,
            ],
          ],
        },
      ],
    };
    const policies = Object.values(template.findResources('AWS::IAM::Policy')).map((policy) => ({
      roles: JSON.stringify(policy.Properties.Roles),
      connects: policy.Properties.PolicyDocument.Statement.filter((s: { Action: unknown }) =>
        JSON.stringify(s.Action).includes('elasticache:'),
      ),
    }));
    // Granted to the consumer's role and the monitor's, which counts the cache's unresolved
    // records; not to the publisher's.
    const granted = policies.filter((policy) => policy.connects.length > 0);
    expect(granted.map((policy) => policy.connects)).toEqual([[connect], [connect]]);
    expect(granted.map((policy) => policy.roles.match(/Pipeline(Consumer|Monitor)Role/)?.[1]).sort()).toEqual(
      ['Consumer', 'Monitor'],
    );
  });
});

describe('the monitor', () => {
  it("counts the cache's unresolved records: told the cache's variables, in the consumer's subnets and security group", () => {
    expect(monitorFunction().Environment.Variables).toMatchObject({
      [MONITOR_ENVIRONMENT.valkeyEndpoint]:
        consumerFunction().Environment.Variables[CONSUMER_ENVIRONMENT.valkeyEndpoint],
      [MONITOR_ENVIRONMENT.valkeyUserId]: pipeline.leaseRecordsCache?.userId,
      [MONITOR_ENVIRONMENT.valkeyCacheName]: pipeline.leaseRecordsCache?.cacheName,
      [MONITOR_ENVIRONMENT.idempotencyTableName]: { Ref: expect.stringMatching(/^PipelineIdempotencyTable/) },
    });
    expect(monitorFunction().VpcConfig).toEqual(consumerFunction().VpcConfig);
  });
});

describe("the consumer's and the monitor's bundles", () => {
  const bundled = async (inject: string[], entry = FIXTURE_CONSUMER) => {
    const outdir = await mkdtemp(join(tmpdir(), 'oncely-valkey-bundle-'));
    try {
      const bundling = lambdaBundling({ inject });
      await build({
        ...lambdaBuildOptions({ projectRoot: PROJECT_ROOT, entry, outdir }, bundling),
        logLevel: 'error',
      });
      return await readFile(join(outdir, lambdaBundleFile()), 'utf8');
    } finally {
      await rm(outdir, { recursive: true, force: true });
    }
  };

  it("carries the Valkey store and iovalkey only with leaseRecords: 'valkey', which injects them", async () => {
    // The module the construct injects (oncely-pipeline.ts), and what only it brings: the token's
    // request, the store's Lua scripts, iovalkey's cluster client.
    const injected = packageEntry('../../lambdas/consumer/valkey-default-store');
    const marks = [/ResourceType/, /redis\.call/, /CLUSTER SLOTS|cluster slots|clusterRetryStrategy/i];
    const [withValkey, without] = await Promise.all([bundled([injected]), bundled([])]);
    for (const mark of marks) {
      expect(withValkey).toMatch(mark);
      expect(without).not.toMatch(mark);
    }
  }, 60_000);

  it("carry the monitor's Valkey counter only with leaseRecords: 'valkey', which injects it", async () => {
    const entry = packageEntry('../../lambdas/monitor/handler');
    const injected = packageEntry('../../lambdas/monitor/valkey-default-counter');
    const marks = [/ZCARD/, /CLUSTER SLOTS|cluster slots|clusterRetryStrategy/i];
    const [withValkey, without] = await Promise.all([bundled([injected], entry), bundled([], entry)]);
    for (const mark of marks) {
      expect(withValkey).toMatch(mark);
      expect(without).not.toMatch(mark);
    }
  }, 60_000);
});

describe('the outputs', () => {
  it("name the cache's endpoint, its name and its user, for oncely in-doubt and history; not on a DynamoDB pipeline", () => {
    const [cacheId] = only('AWS::ElastiCache::ServerlessCache');
    const outputs = template.findOutputs('*');
    expect(outputs[PIPELINE_CACHE_OUTPUTS.endpoint]?.Value).toEqual({
      'Fn::Join': [
        '',
        [{ 'Fn::GetAtt': [cacheId, 'Endpoint.Address'] }, ':', { 'Fn::GetAtt': [cacheId, 'Endpoint.Port'] }],
      ],
    });
    expect(outputs[PIPELINE_CACHE_OUTPUTS.name]?.Value).toBe(pipeline.leaseRecordsCache?.cacheName);
    expect(outputs[PIPELINE_CACHE_OUTPUTS.userId]?.Value).toBe(pipeline.leaseRecordsCache?.userId);
    const prefixed = buildStack({ leaseRecords: 'valkey', outputPrefix: 'Orders' }).template.findOutputs('*');
    for (const name of Object.values(PIPELINE_CACHE_OUTPUTS))
      expect(prefixed).toHaveProperty(`Orders${name}`);
    const plain = buildStack().template.findOutputs('*');
    for (const name of Object.values(PIPELINE_CACHE_OUTPUTS)) expect(plain).not.toHaveProperty(name);
  });
});

describe('the default, DynamoDB', () => {
  it('provisions no VPC, no cache and no endpoint, and tells the consumer and the monitor no Valkey variable', () => {
    const { template: plain, pipeline: dynamo } = buildStack();
    for (const type of ['AWS::EC2::VPC', 'AWS::ElastiCache::ServerlessCache', 'AWS::EC2::VPCEndpoint']) {
      plain.resourceCountIs(type, 0);
    }
    expect(dynamo.consumerEnvironment[CONSUMER_ENVIRONMENT.valkeyEndpoint]).toBeUndefined();
    const functions = Object.values(plain.findResources('AWS::Lambda::Function'));
    for (const fn of functions) {
      expect(fn.Properties.VpcConfig).toBeUndefined();
      expect(Object.keys(fn.Properties.Environment?.Variables ?? {})).not.toContain(
        MONITOR_ENVIRONMENT.valkeyEndpoint,
      );
    }
  });
});

describe('props', () => {
  const refusal = (props: Record<string, unknown>, consumer?: OncelyPipelineProps['consumer']) => {
    const own = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Test');
    try {
      new OncelyPipeline(own, 'Pipeline', { consumer: consumer ?? { entry: FIXTURE_CONSUMER }, ...props });
    } catch (error) {
      expect(error).toBeInstanceOf(OncelyConfigurationError);
      return (error as Error).message;
    }
    throw new Error('expected a refusal');
  };

  it('refuses an unknown store, and a vpc or vpcEndpoints without Valkey', () => {
    expect(refusal({ leaseRecords: 'redis' })).toMatch(
      /leaseRecords \(redis\) must be 'dynamodb' or 'valkey'/,
    );
    const own = new Stack(new App(), 'Other');
    expect(refusal({ vpc: new Vpc(own, 'Vpc'), vpcEndpoints: false })).toMatch(
      /- vpc applies only with leaseRecords: 'valkey'[\s\S]*- vpcEndpoints applies only/,
    );
  });

  it('refuses a consumer it does not build, and network options on the consumer entry', () => {
    const own = new Stack(new App(), 'Built');
    const role = new Role(own, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    const fn = new LambdaFunction(own, 'Fn', {
      runtime: Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code: Code.fromInline('export const handler = async () => ({})'),
      role,
    });
    expect(refusal({ leaseRecords: 'valkey' }, { function: fn })).toMatch(
      /needs a consumer the construct builds/,
    );
    expect(
      refusal({ leaseRecords: 'valkey' }, { entry: FIXTURE_CONSUMER, vpc: new Vpc(own, 'Vpc') }),
    ).toMatch(/consumer\.vpc cannot be set with leaseRecords: 'valkey'/);
  });
});

describe('cdk-nag', () => {
  it('finds nothing unacknowledged in the AWS Solutions pack', () => {
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    expect(report.violations).toEqual([]);
  });

  it('acknowledges only the findings it explains: the VPC flow log, the network interfaces on *', () => {
    const acknowledged = stack.node
      .findAll()
      .flatMap((construct) => construct.node.metadata)
      .filter((entry) => entry.type === 'aws:cdk:acknowledged-rules')
      .flatMap((entry) => Object.entries(entry.data as Record<string, string>));
    // CloudFormation-Validate::W3010 (the VPC's subnets name their AZs) is the CDK's own acknowledgement.
    const ours = acknowledged.filter(([id]) => !id.startsWith('CloudFormation-Validate::'));
    // The network interfaces' acknowledgement is on each role placed in the VPC: the consumer's, the monitor's.
    expect(ours.map(([id]) => id.replace(/^annotation::/i, '')).sort()).toEqual([
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-VPC7',
    ]);
    for (const [, reason] of ours) expect(reason.length).toBeGreaterThan(60);
  });
});
