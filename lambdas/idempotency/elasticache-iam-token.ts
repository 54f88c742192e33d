import { createHash, createHmac } from 'node:crypto';

/** The AWS credentials a token is signed with: the function's, from its role. */
export interface SigningCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface ElastiCacheIamTokenInput {
  /** The serverless cache's name (or a replication group's id): the signed request's host. */
  cacheName: string;
  /** The IAM-enabled ElastiCache user's id, which is also its name. */
  userId: string;
  /** The cache's region. */
  region: string;
  credentials: SigningCredentials;
  /** When the token is signed, in epoch milliseconds; it is valid 15 minutes from then. */
  now: number;
  /**
   * A serverless cache: adds `ResourceType=ServerlessCache` to the signed request.
   * @default true
   */
  serverless?: boolean;
}

/** How long a token is valid: 15 minutes, ElastiCache's limit. */
export const ELASTICACHE_TOKEN_EXPIRES_SECONDS = 900;

const ALGORITHM = 'AWS4-HMAC-SHA256';
const SERVICE = 'elasticache';
/** The hash of an empty payload: the signed request is a GET without a body. */
const EMPTY_PAYLOAD_HASH = createHash('sha256').update('').digest('hex');

/**
 * The password of a connection authenticated with IAM to ElastiCache for Valkey (AWS's "Authenticating
 * with IAM", docs.aws.amazon.com/AmazonElastiCache/latest/dg/auth-iam.html): a SigV4 query-presigned
 * `GET http://<cacheName>/?Action=connect&User=<userId>[&ResourceType=ServerlessCache]` for the
 * service `elasticache`, expiring in 15 minutes, without its `http://`. The username is the user's
 * id. Pure: the same credentials, clock and names give the same token.
 */
export function elastiCacheIamToken(input: ElastiCacheIamTokenInput): string {
  const { cacheName, userId, region, credentials } = input;
  const amzDate = new Date(input.now)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const scope = `${day}/${region}/${SERVICE}/aws4_request`;
  const query: [string, string][] = [
    ['Action', 'connect'],
    ['User', userId],
    ...(input.serverless === false ? [] : ([['ResourceType', 'ServerlessCache']] as [string, string][])),
    ['X-Amz-Algorithm', ALGORITHM],
    ['X-Amz-Credential', `${credentials.accessKeyId}/${scope}`],
    ['X-Amz-Date', amzDate],
    ['X-Amz-Expires', String(ELASTICACHE_TOKEN_EXPIRES_SECONDS)],
    ...(credentials.sessionToken
      ? ([['X-Amz-Security-Token', credentials.sessionToken]] as [string, string][])
      : []),
    ['X-Amz-SignedHeaders', 'host'],
  ];
  const canonicalQuery = query
    .map(([name, value]) => [uriEncode(name), uriEncode(value)])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const canonicalRequest = [
    'GET',
    '/',
    canonicalQuery,
    `host:${cacheName}\n`,
    'host',
    EMPTY_PAYLOAD_HASH,
  ].join('\n');
  const stringToSign = [ALGORITHM, amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  let key: Buffer = hmac(`AWS4${credentials.secretAccessKey}`, day);
  for (const part of [region, SERVICE, 'aws4_request']) key = hmac(key, part);
  const signature = createHmac('sha256', key).update(stringToSign).digest('hex');
  return `${cacheName}/?${canonicalQuery}&X-Amz-Signature=${signature}`;
}

/** RFC 3986 encoding, as SigV4 asks: everything but unreserved characters. */
function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}
