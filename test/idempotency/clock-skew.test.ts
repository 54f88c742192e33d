import { clockSkewContract } from './clock-skew-contract.js';
import { dynamoDbHarness } from './dynamodb-harness.js';

// The clock-skew contract (clock-skew-contract.ts) against DynamoDB Local; valkey-store.test.ts
// runs it on redis-server.

clockSkewContract('DynamoDB', () => dynamoDbHarness('skew'));
