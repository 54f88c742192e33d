import { Names, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  type ISecurityGroup,
  type IVpc,
  Peer,
  Port,
  SecurityGroup,
  type SelectedSubnets,
} from 'aws-cdk-lib/aws-ec2';
import { CfnServerlessCache, CfnUser, CfnUserGroup } from 'aws-cdk-lib/aws-elasticache';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { SERVERLESS_KEY_PREFIX } from '../../lambdas/consumer/environment.js';

/**
 * The ports of a serverless Valkey cache: 6379 for reads and writes, 6380 for reads a client sends to
 * replicas (the serverless "reader" port). The store only uses 6379; 6380 is open so that a client
 * reading from replicas, pointed at the same cache, is not refused by the network.
 */
export const VALKEY_PORT = 6379;
export const VALKEY_READER_PORT = 6380;

/**
 * What the consumer's ElastiCache user may do (its keys: the default store's, `SERVERLESS_KEY_PREFIX`): the commands of the store's scripts and of the
 * client's connection, on its own keys only. `-@dangerous` (FLUSHALL, KEYS, CONFIG…) is taken back
 * after the categories that would grant some of it; `info` is given back for iovalkey's ready check,
 * and CLUSTER SLOTS and CLUSTER INFO, which its cluster client asks on connecting and on MOVED:
 * without them it never connects ("Failed to refresh slots cache"; the sandbox shows it, and a
 * node-based cluster refuses them to such a user, ioredis#1902).
 */
export const VALKEY_ACCESS_STRING = `on ~${SERVERLESS_KEY_PREFIX}* -@all +@read +@write +@scripting +@connection -@dangerous +info +cluster|slots +cluster|info`;

/** Where `ValkeyLeaseCache` goes and whom it admits. */
export interface ValkeyLeaseCacheProps {
  /** The VPC of the cache's security group. */
  readonly vpc: IVpc;
  /** Where the cache's network interfaces go: the consumer's subnets, one per AZ, up to 3. */
  readonly subnets: SelectedSubnets;
  /** The consumer's security group: the only one the cache admits. */
  readonly clientSecurityGroup: ISecurityGroup;
  /** The cache's on stack deletion: the pipeline's `removalPolicy`. */
  readonly removalPolicy: RemovalPolicy;
  /**
   * The customer-managed key encrypting the cache's data at rest: the pipeline's `encryptionKey`.
   * @default an AWS-owned key
   */
  readonly encryptionKey?: IKey;
}

/**
 * An ElastiCache Serverless cache for Valkey holding a consumer's lease records (DESIGN §3.1), with
 * its own security group, admitting the consumer's only, and IAM authentication: one ElastiCache user
 * whose password is a SigV4 token (no secret to keep or rotate), in a user group attached to the
 * cache. TLS is always on for a serverless cache.
 */
export class ValkeyLeaseCache extends Construct {
  /** The serverless cache (engine `valkey`). */
  readonly cache: CfnServerlessCache;
  /** The IAM-authenticated ElastiCache user the consumer connects as. */
  readonly user: CfnUser;
  /** The cache's security group: ingress from the client's group only, on 6379–6380. */
  readonly securityGroup: SecurityGroup;
  /** The cache's name: the host of the IAM token's signed request. */
  readonly cacheName: string;
  /** The user's id, which is also its name: the username of the connection. */
  readonly userId: string;

  constructor(scope: Construct, id: string, props: ValkeyLeaseCacheProps) {
    super(scope, id);
    // Lowercase letters, digits and single hyphens, starting with a letter, at most 40 (the cache's
    // limit); unique in the account and region as the construct path is in the app.
    this.cacheName = serverlessName(this, 'cache');
    this.userId = serverlessName(this, 'user');
    this.securityGroup = new SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      description: 'The lease records cache: admits the Oncely consumer only',
      allowAllOutbound: false,
    });
    this.securityGroup.addIngressRule(
      Peer.securityGroupId(props.clientSecurityGroup.securityGroupId),
      Port.tcpRange(VALKEY_PORT, VALKEY_READER_PORT),
      'The Oncely consumer (Valkey, and the serverless reader port)',
    );
    this.user = new CfnUser(this, 'User', {
      engine: 'valkey',
      userId: this.userId,
      // IAM-authenticated users must have the same name as their id.
      userName: this.userId,
      authenticationMode: { Type: 'iam' },
      accessString: VALKEY_ACCESS_STRING,
    });
    const userGroup = new CfnUserGroup(this, 'UserGroup', {
      engine: 'valkey',
      userGroupId: serverlessName(this, 'users'),
      // Refs (the ids), so that CloudFormation makes the user before the group, the group before the cache.
      userIds: [this.user.ref],
    });
    this.cache = new CfnServerlessCache(this, 'Cache', {
      engine: 'valkey',
      serverlessCacheName: this.cacheName,
      description: 'Oncely lease records (DESIGN §3.1)',
      subnetIds: props.subnets.subnetIds.slice(0, 3),
      securityGroupIds: [this.securityGroup.securityGroupId],
      userGroupId: userGroup.ref,
      kmsKeyId: props.encryptionKey?.keyArn,
    });
    this.cache.applyRemovalPolicy(props.removalPolicy);
  }

  /** `host:port` of the cache's endpoint (TLS). */
  get endpoint(): string {
    return `${this.cache.attrEndpointAddress}:${this.cache.attrEndpointPort}`;
  }

  /**
   * Lets `grantee` connect as the cache's user: `elasticache:Connect` on the cache and on the user,
   * the two resources IAM authentication checks, and nothing else.
   */
  grantConnect(grantee: IGrantable): void {
    const { partition, region, account } = Stack.of(this);
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['elasticache:Connect'],
        resources: [
          this.cache.attrArn,
          `arn:${partition}:elasticache:${region}:${account}:user:${this.userId}`,
        ],
      }),
    );
  }
}

/** A name ElastiCache takes for `scope`'s `what`: lowercase, hyphenated, at most 40 characters. */
function serverlessName(scope: Construct, what: string): string {
  const unique = Names.uniqueResourceName(scope, { maxLength: 40 - what.length - 1, separator: '-' })
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '')
    .replace(/-+/g, '-');
  const name = `${unique}-${what}`.replace(/^[^a-z]+/, '');
  return name.replace(/-+/g, '-');
}
