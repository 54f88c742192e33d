import { Annotations, Token } from 'aws-cdk-lib';
import {
  type Attribute,
  AttributeType,
  BillingMode,
  type CfnTable,
  ProjectionType,
  StreamViewType,
  Table,
} from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import {
  DEFAULT_PARTITION_KEY,
  DEFAULT_SORT_KEY,
  OUTBOX_ATTRIBUTES,
  OUTBOX_PENDING_INDEX,
} from '../../lambdas/outbox/layout.js';
import type { ResolvedOutboxSettings } from './outbox-settings.js';

/** The outbox's own table: string `pk` and `sk`, on-demand, PITR, a NEW_IMAGE stream, TTL on `expiresAt`. */
export function createOutboxTable(scope: Construct, id: string, settings: ResolvedOutboxSettings): Table {
  return new Table(scope, id, {
    partitionKey: { name: DEFAULT_PARTITION_KEY, type: AttributeType.STRING },
    sortKey: { name: DEFAULT_SORT_KEY, type: AttributeType.STRING },
    billingMode: BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    // The relay reads only the new image of a pending marker.
    stream: StreamViewType.NEW_IMAGE,
    timeToLiveAttribute: OUTBOX_ATTRIBUTES.expiresAt,
    deletionProtection: settings.deletionProtection,
    removalPolicy: settings.removalPolicy,
  });
}

/** Stream views that carry the new image, which the relay's filter and the relay read. */
const USABLE_STREAM_VIEWS: readonly string[] = [StreamViewType.NEW_IMAGE, StreamViewType.NEW_AND_OLD_IMAGES];

/** The table's key attributes, when they are one string partition key and one string sort key. */
export function stringKeysOf(table: Table): { partitionKey: string; sortKey: string } | undefined {
  const { partitionKeys, sortKeys } = table.schemaV2();
  const [partitionKey] = partitionKeys;
  const [sortKey] = sortKeys;
  const single = partitionKeys.length === 1 && sortKeys.length === 1;
  if (!single || partitionKey?.type !== AttributeType.STRING || sortKey?.type !== AttributeType.STRING) {
    return undefined;
  }
  return { partitionKey: partitionKey.name, sortKey: sortKey.name };
}

/** What keeps a producer's table from holding the outbox; empty when it can. */
export function producerTableProblems(table: Table): string[] {
  const problems: string[] = [];
  if (!stringKeysOf(table)) {
    const { partitionKeys, sortKeys } = table.schemaV2();
    const described = (keys: Attribute[]) => keys.map((key) => `${key.name} (${key.type})`).join(' + ');
    const keys = `${described(partitionKeys)}${sortKeys.length > 0 ? ` and ${described(sortKeys)}` : ' alone'}`;
    problems.push(
      `the table ${table.node.path} is keyed by ${keys}: the outbox needs a string partition key and a string ` +
        'sort key (S), as its items and pending markers share your table under prefixed keys. Give it such ' +
        'keys, or leave out `table` to let the construct create a table of its own.',
    );
  }
  const stream = (table.node.defaultChild as CfnTable).streamSpecification;
  // A token is decided at deploy time: nothing to check here.
  if (!Token.isUnresolved(stream)) {
    const view = (stream as CfnTable.StreamSpecificationProperty | undefined)?.streamViewType;
    if (!view || !USABLE_STREAM_VIEWS.includes(view)) {
      problems.push(
        `the table ${table.node.path} has ${view ? `a ${view} stream` : 'no stream'}: the relay is invoked by ` +
          'the stream with the new image of each pending marker. Set `stream: StreamViewType.NEW_IMAGE` (or ' +
          'NEW_AND_OLD_IMAGES) on it.',
      );
    }
  }
  return problems;
}

/**
 * Warns when SENT items would never expire: they carry `expiresAt`, which only a TTL on that
 * attribute turns into deletions.
 */
export function warnWithoutTtl(scope: Construct, table: Table): void {
  const ttl = (table.node.defaultChild as CfnTable).timeToLiveSpecification;
  if (Token.isUnresolved(ttl)) return;
  const spec = ttl as CfnTable.TimeToLiveSpecificationProperty | undefined;
  const attribute = spec?.enabled === true ? spec.attributeName : undefined;
  if (attribute === OUTBOX_ATTRIBUTES.expiresAt) return;
  Annotations.of(scope).addWarningV2(
    'oncely:outboxTableTtl',
    `The table ${table.node.path} has ${attribute ? `its TTL on ${attribute}` : 'no TTL'}: sent outbox items ` +
      `carry their expiry in ${OUTBOX_ATTRIBUTES.expiresAt} and are kept forever without a TTL on it.`,
  );
}

/**
 * The sparse index of pending markers, oldest first. It projects what the sweeper reads of a marker:
 * its key and group (its commit time, `pendingSince`, is the index's sort key). What else `oncely outbox list` shows
 * (attempts, last error, claim) is on the outbox item, not the marker, so it reads the items.
 *
 * On a provisioned table the index gets the table's capacity: every message writes its marker into
 * the index twice (pending, then sent), and an index short of write capacity throttles the writes
 * to the table itself. CloudFormation's default, 5 write units, would hold the outbox to about 2.5
 * messages a second.
 */
export function addPendingIndex(table: Table): void {
  const throughput = provisionedThroughput(table);
  table.addGlobalSecondaryIndex({
    indexName: OUTBOX_PENDING_INDEX,
    partitionKey: { name: OUTBOX_ATTRIBUTES.pending, type: AttributeType.STRING },
    sortKey: { name: OUTBOX_ATTRIBUTES.pendingSince, type: AttributeType.STRING },
    projectionType: ProjectionType.INCLUDE,
    nonKeyAttributes: [OUTBOX_ATTRIBUTES.key, OUTBOX_ATTRIBUTES.groupId],
    ...(throughput
      ? { readCapacity: throughput.readCapacityUnits, writeCapacity: throughput.writeCapacityUnits }
      : {}),
  });
}

/** The table's provisioned read and write units; undefined for an on-demand table. */
function provisionedThroughput(table: Table): CfnTable.ProvisionedThroughputProperty | undefined {
  const cfn = table.node.defaultChild as CfnTable;
  if (cfn.billingMode === BillingMode.PAY_PER_REQUEST) return undefined;
  return cfn.provisionedThroughput as CfnTable.ProvisionedThroughputProperty | undefined;
}

/**
 * A provisioned table whose writes auto scale while the pending index's do not: the index keeps its
 * first capacity while the table's grows, and throttles the table's writes under load. Checked at
 * synth, after your code had its chance to add the index's scaling (the index exists only once the
 * outbox does).
 */
export function pendingIndexScalingProblems(table: Table): string[] {
  const tableScales = table.node.tryFindChild('WriteScaling') !== undefined;
  const indexScales = table.node.tryFindChild(`${OUTBOX_PENDING_INDEX}WriteScaling`) !== undefined;
  if (!tableScales || indexScales) return [];
  return [
    `the table ${table.node.path} auto scales its write capacity, but the outbox's pending index ` +
      `(${OUTBOX_PENDING_INDEX}) does not, and each message writes the index twice: scale it too, after ` +
      `creating the outbox: table.autoScaleGlobalSecondaryIndexWriteCapacity('${OUTBOX_PENDING_INDEX}', ` +
      '{ minCapacity, maxCapacity }).scaleOnUtilization({ targetUtilizationPercent }), as for the table.',
  ];
}
