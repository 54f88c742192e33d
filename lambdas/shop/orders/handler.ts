import { Outbox } from 'oncely/outbox';
import { ORDERS_ENVIRONMENT } from './environment.js';
import { createPlaceOrderHandler } from './place-order.js';

let placeOrder: ReturnType<typeof createPlaceOrderHandler> | undefined;

/** The Lambda entry point; the outbox reads its table from the environment OncelyOutbox.grantWrite sets. */
export async function handler(event: unknown) {
  placeOrder ??= createPlaceOrderHandler({
    outbox: new Outbox(),
    ordersTableName: String(process.env[ORDERS_ENVIRONMENT.ordersTableName]),
  });
  return placeOrder(event);
}
