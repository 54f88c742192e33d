/**
 * Each store's typical request latency in the region, added to its requests in the second
 * comparison, with where it comes from. DynamoDB: AWS gives single-digit milliseconds for a
 * GetItem or a PutItem; 5 ms is the middle of that range, and the latency (2) adds. ElastiCache:
 * AWS gives microseconds to below a millisecond; 1 ms is the top of that range (a Lambda in one
 * zone reaching the serverless cache's endpoint, perhaps in another), and also the shortest wait
 * Node's timers can hold: a shorter one cannot be added this way, so the figure is not Valkey's best.
 */
export const TYPICAL_LATENCY: Record<
  'valkey' | 'dynamodb',
  { ms: number; says: string; sources: readonly string[] }
> = {
  valkey: {
    ms: 1,
    says: 'ElastiCache: "microsecond latency" (AWS\'s FAQ), "sub-millisecond" for ElastiCache Serverless (re:Invent 2025, DAT437)',
    sources: [
      'https://aws.amazon.com/elasticache/faqs/',
      'https://www.antstack.com/talks/reinvent25/aws-reinvent-2025---optimizing-for-high-performance-with-amazon-elasticache-serverless-dat437',
    ],
  },
  dynamodb: {
    ms: 5,
    says:
      'DynamoDB: "single-digit millisecond performance at any scale" (its developer guide), "consistently low ' +
      'latency (typically in the single digit milliseconds)" (an AWS whitepaper)',
    sources: [
      'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Introduction.html',
      'https://docs.aws.amazon.com/whitepapers/latest/comparing-dynamodb-and-hbase-for-nosql/amazon-dynamodb-architecture-overview.html',
      'https://aws.amazon.com/blogs/database/understanding-amazon-dynamodb-latency/',
    ],
  },
};
