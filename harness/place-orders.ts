import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { PlaceOrderRequest } from '../lambdas/shop/orders/place-order.js';

/** What one PlaceOrder invocation came to: placed, or the function error Lambda answered with. */
export type PlaceOrderOutcome =
  | { placed: true; orderId: string }
  | { placed: false; orderId: string; errorType: string; errorMessage: string };

/** Invokes the PlaceOrder function as an API backend would be invoked: one order, synchronously. */
export async function invokePlaceOrder(
  lambda: LambdaClient,
  functionName: string,
  order: PlaceOrderRequest,
): Promise<PlaceOrderOutcome> {
  const output = await lambda.send(
    new InvokeCommand({
      FunctionName: functionName,
      Payload: new TextEncoder().encode(JSON.stringify(order)),
    }),
  );
  if (!output.FunctionError) return { placed: true, orderId: order.orderId };
  const text = new TextDecoder().decode(output.Payload);
  const error = JSON.parse(text) as { errorType?: string; errorMessage?: string };
  return {
    placed: false,
    orderId: order.orderId,
    errorType: error.errorType ?? output.FunctionError,
    errorMessage: error.errorMessage ?? text,
  };
}

/**
 * Places each customer's orders in turn, `concurrency` customers at a time: one customer's orders
 * never overlap, so its OrderPlaced events commit, and leave the outbox, in the customer's order.
 */
export async function placeOrders(
  lambda: LambdaClient,
  functionName: string,
  perCustomer: PlaceOrderRequest[][],
  concurrency: number,
  onOutcome: (outcome: PlaceOrderOutcome) => void = () => undefined,
): Promise<PlaceOrderOutcome[]> {
  const outcomes: PlaceOrderOutcome[] = [];
  let next = 0;
  const worker = async () => {
    for (let chain = perCustomer[next++]; chain; chain = perCustomer[next++]) {
      for (const order of chain) {
        const outcome = await invokePlaceOrder(lambda, functionName, order);
        outcomes.push(outcome);
        onOutcome(outcome);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return outcomes;
}
