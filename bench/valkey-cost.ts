import { PRICES as AWS_PRICES, type Prices } from './cost.js';

/**
 * What lease-mode records cost in ElastiCache Serverless for Valkey against DynamoDB on-demand, at
 * us-east-1's published prices as of 2026-06 (not re-checked on the day of a run: the machine
 * that runs the benchmarks may have no network). DynamoDB's request and Lambda's prices are (7)'s
 * (cost.ts); the rest is here, each with where it was read.
 */
export const VALKEY_PRICES = {
  asOf: '2026-06',
  region: 'us-east-1',
  /**
   * ElastiCache Serverless for Valkey: $0.0023 per million ECPUs and $0.084 per GB-hour of data
   * stored, metered for at least 100 MB. The pricing page states the 100 MB minimum and that
   * Valkey is priced 33 % below Redis OSS; its Redis OSS prices ($0.0034 per million ECPUs,
   * $0.125 per GB-hour) are in AWS's own worked example; the Valkey figures are quoted from the
   * pricing page by third parties (and are the Redis OSS ones less 33 %).
   */
  elasticacheValkeyPerMillionEcpus: 0.0023,
  elasticacheValkeyPerGbHour: 0.084,
  elasticacheValkeyMinimumGb: 0.1,
  /** An interface VPC endpoint (AWS PrivateLink): per hour in each Availability Zone, and per GB processed. */
  interfaceEndpointPerAzHour: 0.01,
  interfaceEndpointPerGb: 0.01,
  /** DynamoDB Standard table storage, per GB-month; the first 25 GB a month are free (left out here). */
  dynamodbStoragePerGbMonth: 0.25,
  /** AWS's month in its pricing examples. */
  hoursPerMonth: 730,
  sources: {
    elasticache: [
      'https://aws.amazon.com/elasticache/pricing/',
      'https://aws.amazon.com/blogs/database/unlock-on-demand-cost-optimized-performance-with-amazon-elasticache-serverless/',
      'https://www.usage.ai/blogs/aws/database-savings-plans/elasticache/serverless-pricing/',
    ],
    ecpu: [
      'https://aws.amazon.com/elasticache/pricing/',
      'https://raw.githubusercontent.com/aws/agent-toolkit-for-aws/main/skills/specialized-skills/database-skills/amazon-elasticache/scripts/command_classifier.py',
    ],
    privateLink: ['https://aws.amazon.com/privatelink/pricing/'],
    dynamodbStorage: [
      'https://aws.amazon.com/dynamodb/pricing/on-demand/',
      'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html',
    ],
  },
} as const;

export type ValkeyPrices = typeof VALKEY_PRICES;

/** What a Valkey deployment adds, whatever the traffic: the consumer in a VPC reaching AWS's APIs. */
export interface ValkeyDeployment {
  /**
   * Interface endpoints the consumer needs once in a VPC: SQS (its visibility changes and the
   * DLQ). DynamoDB's is a gateway endpoint, free; logs and metrics leave through Lambda's own.
   */
  interfaceEndpoints: number;
  /** The Availability Zones of its subnets: a VPC Lambda and a serverless cache span at least 2. */
  availabilityZones: number;
}

export const VALKEY_DEPLOYMENT: ValkeyDeployment = { interfaceEndpoints: 1, availabilityZones: 2 };

/** Bytes in a GB as storage is billed (AWS counts storage in GiB, 2^30 bytes). */
export const GB = 2 ** 30;

/**
 * ECPUs a script costs, as ElastiCache bills requests: 1 ECPU per KB transferred for a simple read
 * or write (at least 1), and for a command that needs more vCPU time (a script), the higher of its
 * KB and its vCPU time against a simple command's. AWS does not publish how it measures the vCPU
 * time: here it is the server's main thread's CPU per request, its network reads and writes
 * included, against a 1,000-byte SET's measured the same way.
 */
export function ecpusPerScript(script: {
  /** The command's and its answer's bytes. */
  bytes: number;
  serverCpuMicros: number;
  /** A 1,000-byte SET's, the simple write ElastiCache bills 1 ECPU for. */
  baselineCpuMicros: number;
}): number {
  return Math.max(1, script.bytes / 1024, script.serverCpuMicros / script.baselineCpuMicros);
}

/** What one message uses in each store, and the Lambda time its batch takes there. */
export interface StoreUsage {
  /** Bytes a record takes while it lives, as the store bills it. */
  storedBytesPerRecord: number;
  /** Lambda's billed ms per message: a batch's duration rounded up to the ms, over its messages. */
  lambdaMsPerMessage: number;
}

export interface DynamoDbUsage extends StoreUsage {
  writeUnits: number;
  readUnits: number;
}

export interface ValkeyUsage extends StoreUsage {
  ecpus: number;
}

/** Dollars a month, by what is billed. */
export interface MonthlyCost {
  /** DynamoDB's request units; ElastiCache's ECPUs. */
  requests: number;
  /** The records while they live: DynamoDB's storage; ElastiCache's data stored (at least its minimum). */
  storage: number;
  /** The consumer's Lambda duration. */
  lambda: number;
  /** What does not follow the traffic: the VPC's interface endpoints. */
  fixed: number;
  total: number;
}

/** How long records are kept, and the consumer's memory: what storage and Lambda time are billed by. */
export interface CostAssumptions {
  /** A record's lifetime: the idempotency TTL (Valkey keeps a key an hour longer: `VALKEY_KEY_GRACE_MS`). */
  recordHours: number;
  lambdaMemoryMiB: number;
}

function lambdaCost(messages: number, usage: StoreUsage, memoryMiB: number, prices: Prices): number {
  return messages * (usage.lambdaMsPerMessage / 1000) * (memoryMiB / 1024) * prices.lambdaArmPerGbSecond;
}

/**
 * GB held at a steady rate of `messagesPerMonth`, each record living `recordHours`: the records of
 * the last `recordHours`.
 */
export function storedGb(
  messagesPerMonth: number,
  bytesPerRecord: number,
  recordHours: number,
  prices = VALKEY_PRICES,
): number {
  return ((messagesPerMonth * recordHours) / prices.hoursPerMonth) * (bytesPerRecord / GB);
}

/** A month of DynamoDB on-demand at `messagesPerMonth`. */
export function dynamodbMonthlyCost(
  messagesPerMonth: number,
  usage: DynamoDbUsage,
  assumptions: CostAssumptions,
  prices: ValkeyPrices = VALKEY_PRICES,
  aws: Prices = AWS_PRICES,
): MonthlyCost {
  const requests =
    (messagesPerMonth / 1e6) *
    (usage.writeUnits * aws.dynamodbPerMillionWriteUnits + usage.readUnits * aws.dynamodbPerMillionReadUnits);
  const storage =
    storedGb(messagesPerMonth, usage.storedBytesPerRecord, assumptions.recordHours, prices) *
    prices.dynamodbStoragePerGbMonth;
  const lambda = lambdaCost(messagesPerMonth, usage, assumptions.lambdaMemoryMiB, aws);
  return { requests, storage, lambda, fixed: 0, total: requests + storage + lambda };
}

/** A month of ElastiCache Serverless for Valkey at `messagesPerMonth`, with its VPC endpoints. */
export function valkeyMonthlyCost(
  messagesPerMonth: number,
  usage: ValkeyUsage,
  assumptions: CostAssumptions,
  deployment: ValkeyDeployment = VALKEY_DEPLOYMENT,
  prices: ValkeyPrices = VALKEY_PRICES,
  aws: Prices = AWS_PRICES,
): MonthlyCost {
  const requests = (messagesPerMonth / 1e6) * usage.ecpus * prices.elasticacheValkeyPerMillionEcpus;
  const gb = storedGb(messagesPerMonth, usage.storedBytesPerRecord, assumptions.recordHours + 1, prices);
  const storage =
    Math.max(gb, prices.elasticacheValkeyMinimumGb) *
    prices.elasticacheValkeyPerGbHour *
    prices.hoursPerMonth;
  const lambda = lambdaCost(messagesPerMonth, usage, assumptions.lambdaMemoryMiB, aws);
  const fixed =
    deployment.interfaceEndpoints *
    deployment.availabilityZones *
    prices.interfaceEndpointPerAzHour *
    prices.hoursPerMonth;
  return { requests, storage, lambda, fixed, total: requests + storage + lambda + fixed };
}

/** Where Valkey costs less than DynamoDB as the traffic grows. */
export type BreakEven =
  /** Valkey costs less above this many messages a month. */
  | { kind: 'above'; messagesPerMonth: number }
  /** At no rate: each message costs Valkey at least as much as DynamoDB, and its fixed costs come on top. */
  | { kind: 'never' };

/**
 * The rate above which Valkey's month costs less than DynamoDB's. Valkey's month is its fixed cost,
 * a cost per message (ECPUs, Lambda) and its storage, billed at no less than the minimum; DynamoDB's
 * is a cost per message (units, storage, Lambda). Their difference is convex in the rate (a maximum
 * of two lines, less a line), so Valkey is cheaper above one rate or at none: none when, once the
 * storage minimum is passed, a message costs Valkey at least what it costs DynamoDB.
 */
export function breakEven(
  valkey: ValkeyUsage,
  dynamodb: DynamoDbUsage,
  assumptions: CostAssumptions,
  deployment: ValkeyDeployment = VALKEY_DEPLOYMENT,
  prices: ValkeyPrices = VALKEY_PRICES,
  aws: Prices = AWS_PRICES,
): BreakEven {
  // Each cost per message, from a month of a million (every term but the fixed and minimum is linear).
  const million = 1e6;
  const perDynamoDb = dynamodbMonthlyCost(million, dynamodb, assumptions, prices, aws).total / million;
  const valkeyMonth = valkeyMonthlyCost(million, valkey, assumptions, deployment, prices, aws);
  const perValkey = (valkeyMonth.requests + valkeyMonth.lambda) / million;
  const storagePerMessage =
    (storedGb(million, valkey.storedBytesPerRecord, assumptions.recordHours + 1, prices) / million) *
    prices.elasticacheValkeyPerGbHour *
    prices.hoursPerMonth;
  const minimumStorage =
    prices.elasticacheValkeyMinimumGb * prices.elasticacheValkeyPerGbHour * prices.hoursPerMonth;
  const fixed = valkeyMonth.fixed;
  // Past the storage minimum: Valkey's month = fixed + (perValkey + storagePerMessage) × rate.
  const marginal = perDynamoDb - perValkey - storagePerMessage;
  if (marginal <= 0) return { kind: 'never' };
  // Where the storage passes its minimum: if Valkey is already cheaper there, the crossing is below it.
  const kink = minimumStorage / storagePerMessage;
  const crossing =
    fixed + minimumStorage + (perValkey - perDynamoDb) * kink <= 0
      ? (fixed + minimumStorage) / (perDynamoDb - perValkey)
      : fixed / marginal;
  return { kind: 'above', messagesPerMonth: crossing };
}

/**
 * The longest record lifetime, in hours, at which a message would cost Valkey less than DynamoDB
 * (so that some rate breaks even): storage is the term a lifetime scales, in both stores. Undefined
 * if none would (Valkey's ECPUs and Lambda time alone cost more per message).
 */
export function longestBreakEvenRecordHours(
  valkey: ValkeyUsage,
  dynamodb: DynamoDbUsage,
  lambdaMemoryMiB: number,
  prices: ValkeyPrices = VALKEY_PRICES,
  aws: Prices = AWS_PRICES,
): number | undefined {
  const at = (recordHours: number) => ({ recordHours, lambdaMemoryMiB });
  // Costs per message without storage (lifetime 0), and storage per message per hour of lifetime.
  const ddbBase = dynamodbMonthlyCost(1e6, dynamodb, at(0), prices, aws);
  const valkeyBase = valkeyMonthlyCost(1e6, valkey, at(0), VALKEY_DEPLOYMENT, prices, aws);
  const ddbPerMessage = (ddbBase.requests + ddbBase.lambda) / 1e6;
  const valkeyPerMessage = (valkeyBase.requests + valkeyBase.lambda) / 1e6;
  const ddbStoragePerHour =
    (dynamodb.storedBytesPerRecord / GB / prices.hoursPerMonth) * prices.dynamodbStoragePerGbMonth;
  const valkeyStoragePerHour = (valkey.storedBytesPerRecord / GB) * prices.elasticacheValkeyPerGbHour;
  // Valkey keeps a key an hour past its record's lifetime: its storage covers recordHours + 1.
  const margin = ddbPerMessage - valkeyPerMessage - valkeyStoragePerHour;
  const storageGap = valkeyStoragePerHour - ddbStoragePerHour;
  if (storageGap <= 0) return margin > 0 ? Number.POSITIVE_INFINITY : undefined;
  const hours = margin / storageGap;
  return hours > 0 ? hours : undefined;
}
