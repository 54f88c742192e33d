import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PublishMessage } from '../lambdas/publisher/contract.js';
import { uniqueName } from './resources.js';

/**
 * The second workload of (2): `SendNotification`, the example consumer's event whose effect is one
 * HTTP POST to the notification gateway — an effect that costs no DynamoDB request, so that what a
 * batch takes is the idempotency records' round trips alone.
 */
export const SEND_NOTIFICATION = 'SendNotification';

/** `count` new SendNotification messages dealt round-robin over `groups` message groups; keys unique to this call. */
export function notificationMessages(count: number, groups: number): PublishMessage[] {
  const run = uniqueName('notify');
  return Array.from({ length: count }, (_, index) => ({
    type: SEND_NOTIFICATION,
    groupId: `${run}-g${index % groups}`,
    key: `${run}-${index}`,
    payload: {
      to: `customer${index}@example.com`,
      subject: 'Your order',
      body: `Order ${index} has shipped.`,
    },
  }));
}

/** A notification gateway on loopback that accepts every POST at once: the effect's far side. */
export async function startNotificationGateway(): Promise<{
  url: string;
  posts: () => number;
  stop: () => Promise<void>;
}> {
  let posts = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      posts++;
      response.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/notifications`,
    posts: () => posts,
    stop: () =>
      new Promise((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
