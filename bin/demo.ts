/**
 * `npm start`: what Oncely's idempotency core does, shown against DynamoDB Local with no AWS
 * account. Deliveries are repeated and crashed on purpose; the report checks every effect
 * happened exactly as often as it should, and exits non-zero if one did not.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import {
  DynamoDbIdempotencyStore,
  type IdempotencyObserver,
  LeaseIdempotency,
  TransactionalIdempotency,
} from '../lambdas/runtime/idempotency';
import { startDynamoDbLocal } from '../sandbox/dynamodb-local';
import { localAwsConfig } from '../sandbox/local-aws-config';
import { countRequests } from '../sandbox/request-counter';
import { createIdempotencyTable, createKeyedTable } from '../sandbox/tables';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const quietObserver: IdempotencyObserver = {
  completionWriteFailed: () => undefined,
  leaseLost: () => undefined,
  inDoubt: () => undefined,
  failureWriteFailed: () => undefined,
};
const checks: { name: string; ok: boolean }[] = [];
function check(name: string, ok: boolean): void {
  checks.push({ name, ok });
  console.log(`   ${ok ? '✔' : '✘'} ${name}`);
}

console.log('Oncely demo: effectively-once effects over at-least-once delivery\n');
const dynamodb = await startDynamoDbLocal();
console.log(`DynamoDB Local is up on ${dynamodb.endpoint} (in memory, stopped at the end)\n`);
const client = new DynamoDBClient(localAwsConfig(dynamodb.endpoint));
const requests = countRequests(client);
try {
  await createIdempotencyTable(client, 'oncely-idempotency');
  await createKeyedTable(client, 'oncely-ledger');
  let clock = Date.now();
  const store = new DynamoDbIdempotencyStore({ client, tableName: 'oncely-idempotency', now: () => clock });

  console.log('1. Lease mode, at-most-once: an e-mail gateway that must never send twice');
  const mail = new LeaseIdempotency({ store, namespace: 'mail', mode: 'at-most-once', cache: false });
  const sent: string[] = [];
  const deliveries = ['welcome', 'receipt', 'welcome', 'reset', 'receipt', 'welcome', 'shipped', 'reset'];
  requests.reset();
  for (const key of deliveries) {
    await mail.run({ key, payload: { to: 'ada@example.com', template: key } }, async () => sent.push(key));
  }
  const distinct = new Set(deliveries).size;
  console.log(`   ${deliveries.length} deliveries of ${distinct} notifications, ${sent.length} e-mails sent`);
  console.log(`   DynamoDB requests: ${requests.total()} (2 per first delivery, 1 per duplicate)`);
  check('every notification sent exactly once', sent.length === distinct);
  check(
    'cost is 2 per first delivery + 1 per duplicate',
    requests.total() === distinct * 2 + (deliveries.length - distinct),
  );

  console.log(
    '\n2. A container dies after acquiring its lease; the message comes back after the lease expires',
  );
  const shortLease = { store, cache: false as const, leaseMs: 1_000, observer: quietObserver };
  const payments = new LeaseIdempotency({ ...shortLease, namespace: 'payments', mode: 'at-most-once' });
  const emails = new LeaseIdempotency({ ...shortLease, namespace: 'mail', mode: 'at-least-once' });
  await payments.start({ key: 'charge-42', payload: { cents: 1999 } });
  await emails.start({ key: 'newsletter-7', payload: { issue: 7 } });
  clock += 1_001;
  let charges = 0;
  let newsletters = 0;
  const payment = await payments.run({ key: 'charge-42', payload: { cents: 1999 } }, async () => ++charges);
  const email = await emails.run({ key: 'newsletter-7', payload: { issue: 7 } }, async () => ++newsletters);
  console.log(
    `   at-most-once (payment): ${payment.status}: not charged again, left for \`oncely in-doubt\``,
  );
  console.log(`   at-least-once (newsletter): ${email.status}: sent by the redelivery`);
  check('the payment was not retried blindly', payment.status === 'in-doubt' && charges === 0);
  check('the newsletter was taken over and sent', email.status === 'executed' && newsletters === 1);

  console.log('\n3. Transactional mode: ledger deposits, exactly once, one request each');
  const ledger = new TransactionalIdempotency({ store, namespace: 'ledger', cache: false });
  const deposits = Array.from({ length: 300 }, (_, i) => ({
    id: `dep-${i}`,
    account: `acct-${i % 7}`,
    cents: 100 + i,
  }));
  const redelivered = [...deposits, ...deposits.filter((_, i) => i % 3 === 0)];
  requests.reset();
  let duplicates = 0;
  for (let i = 0; i < redelivered.length; i += 8) {
    const outcomes = await Promise.all(
      redelivered.slice(i, i + 8).map((deposit) =>
        ledger.run({ key: deposit.id, payload: deposit }, () => ({
          writes: [
            {
              Update: {
                TableName: 'oncely-ledger',
                Key: { id: deposit.account },
                UpdateExpression: 'ADD balance :cents',
                ExpressionAttributeValues: { ':cents': deposit.cents },
              },
            },
          ],
        })),
      ),
    );
    duplicates += outcomes.filter((outcome) => outcome.status === 'duplicate').length;
  }
  const documents = DynamoDBDocumentClient.from(client);
  let ledgerTotal = 0;
  for (let account = 0; account < 7; account++) {
    const { Item } = await documents.send(
      new GetCommand({ TableName: 'oncely-ledger', Key: { id: `acct-${account}` } }),
    );
    ledgerTotal += Number(Item?.balance ?? 0);
  }
  const expected = deposits.reduce((sum, deposit) => sum + deposit.cents, 0);
  console.log(
    `   ${redelivered.length} deliveries of ${deposits.length} deposits, 8 at a time; ${duplicates} duplicates stopped`,
  );
  console.log(`   ledger total ${ledgerTotal} cents; sum of distinct deposits ${expected} cents`);
  console.log(
    `   TransactWriteItems: ${requests.counts.TransactWriteItems} (1 per delivery, business write included)`,
  );
  check('ledger equals the sum of the distinct deposits', ledgerTotal === expected);
  check('one request per delivery', requests.counts.TransactWriteItems === redelivered.length);
} finally {
  client.destroy();
  await dynamodb.stop();
}

const failed = checks.filter((c) => !c.ok);
console.log(
  `\n${failed.length === 0 ? 'All' : `${checks.length - failed.length} of`} ${checks.length} checks passed.`,
);
process.exitCode = failed.length === 0 ? 0 : 1;
