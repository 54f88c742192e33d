import { Validations } from 'aws-cdk-lib';
import type { IVpc } from 'aws-cdk-lib/aws-ec2';
import { type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { LeaseRecordsStore } from './lease-records-network.js';

/** The props of `OncelyPipelineProps` that choose where lease records go, and the consumer's. */
interface LeaseRecordsChoice {
  readonly leaseRecords?: LeaseRecordsStore;
  readonly vpc?: IVpc;
  readonly vpcEndpoints?: boolean;
  readonly consumer: object;
}

const STORES: readonly LeaseRecordsStore[] = ['dynamodb', 'valkey'];
/** The consumer entry's network options, which the pipeline sets itself with `leaseRecords: 'valkey'`. */
const CONSUMER_NETWORK_OPTIONS = ['vpc', 'vpcSubnets', 'securityGroups', 'securityGroup', 'allowAllOutbound'];

/** What cannot work in the lease-records props, each with what to do; empty when all can. */
export function leaseRecordsProblems(props: LeaseRecordsChoice): string[] {
  const store = props.leaseRecords ?? 'dynamodb';
  if (!STORES.includes(store)) return [`leaseRecords (${String(store)}) must be 'dynamodb' or 'valkey'.`];
  if (store === 'dynamodb') {
    return (['vpc', 'vpcEndpoints'] as const)
      .filter((name) => props[name] !== undefined)
      .map((name) => `${name} applies only with leaseRecords: 'valkey': remove it, or set leaseRecords.`);
  }
  if ('function' in props.consumer) {
    return [
      "leaseRecords: 'valkey' needs a consumer the construct builds (consumer.entry): it places the function " +
        'in the VPC beside the cache, with its own security group, which a function you built has not.',
    ];
  }
  const consumer = props.consumer as Record<string, unknown>;
  return CONSUMER_NETWORK_OPTIONS.filter((name) => consumer[name] !== undefined).map(
    (name) =>
      `consumer.${name} cannot be set with leaseRecords: 'valkey': the construct places the consumer in the ` +
      "pipeline's vpc (its private subnets, its own security group). Give the VPC as the pipeline's vpc.",
  );
}

/**
 * The network interfaces Lambda creates for `fn` in the VPC: the actions of AWS's
 * `AWSLambdaVPCAccessExecutionRole`, which a role of Oncely's does not carry (it holds no managed
 * policy). EC2 authorises DescribeNetworkInterfaces on no resource, and Lambda creates the
 * interfaces before their ids exist, so they are on `*` (acknowledged for cdk-nag).
 */
export function vpcAccessStatement(fn: IFunction): PolicyStatement {
  if (fn.role) {
    Validations.of(fn.role as IRole).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'The network-interface actions Lambda needs to place the function (the consumer, the monitor) in the VPC (those of AWS’s ' +
        'AWSLambdaVPCAccessExecutionRole): EC2 authorises DescribeNetworkInterfaces on no resource, and the ' +
        'interfaces are created before their ids exist.',
    });
  }
  return new PolicyStatement({
    actions: [
      'ec2:CreateNetworkInterface',
      'ec2:DescribeNetworkInterfaces',
      'ec2:DescribeSubnets',
      'ec2:DeleteNetworkInterface',
      'ec2:AssignPrivateIpAddresses',
      'ec2:UnassignPrivateIpAddresses',
    ],
    resources: ['*'],
  });
}
