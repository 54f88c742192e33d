import { fileURLToPath } from 'node:url';
import { CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { OncelyPipeline } from 'oncely/cdk';
import { SHOP_ENVIRONMENT } from '../../lambdas/shop/consumer/environment.js';
import { OrdersService } from './orders-service.js';
import type { ShopSettings } from './shop-settings.js';

export interface ShopStackProps extends StackProps {
  readonly settings: ShopSettings;
}

/** The output other tools (the demo, the end-to-end suite) find the ledger by. */
export const LEDGER_TABLE_OUTPUT = 'LedgerTableName';
/** The outputs the demo and the end-to-end suite place orders and read the orders table by. */
export const ORDERS_OUTPUTS = {
  placeOrderFunctionName: 'placeOrderFunctionName',
  ordersTableName: 'OrdersTableName',
} as const;

/**
 * The example shop: a ledger table, an Oncely pipeline around the shop's consumer, and the orders
 * service, whose OrderPlaced events leave through a transactional outbox — built
 * with nothing but the package's public entry points, as your own stack would be.
 */
export class ShopStack extends Stack {
  readonly pipeline: OncelyPipeline;
  readonly ledgerTable: Table;
  readonly orders: OrdersService;

  constructor(scope: Construct, id: string, props: ShopStackProps) {
    super(scope, id, props);
    const { settings } = props;
    this.ledgerTable = new Table(this, 'LedgerTable', {
      partitionKey: { name: 'id', type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: settings.pipeline.deletionProtection,
      removalPolicy: settings.pipeline.removalPolicy,
    });
    this.pipeline = new OncelyPipeline(this, 'Pipeline', {
      ...settings.pipeline,
      serviceName: 'shop',
      leaseRecords: settings.leaseRecords,
      consumer: {
        // One entry per queue type, so that the bundle carries one middleware.
        entry: fileURLToPath(
          new URL(
            `../../lambdas/shop/consumer/${settings.pipeline.queueType === 'standard' ? 'standard-handler' : 'handler'}.ts`,
            import.meta.url,
          ),
        ),
        environment: {
          [SHOP_ENVIRONMENT.ledgerTableName]: this.ledgerTable.tableName,
          [SHOP_ENVIRONMENT.notificationUrl]: settings.notificationUrl,
          ...(settings.notificationMode
            ? { [SHOP_ENVIRONMENT.notificationMode]: settings.notificationMode }
            : {}),
        },
      },
    });
    // Transactional mode: TransactWriteItems is authorised per item action (the ledger puts and updates).
    this.pipeline.consumer.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
        resources: [this.ledgerTable.tableArn],
      }),
    );
    new CfnOutput(this, LEDGER_TABLE_OUTPUT, { value: this.ledgerTable.tableName });
    this.orders = new OrdersService(this, 'Orders', {
      pipeline: this.pipeline,
      removalPolicy: settings.pipeline.removalPolicy ?? RemovalPolicy.DESTROY,
      deletionProtection: settings.pipeline.deletionProtection ?? false,
    });
    new CfnOutput(this, ORDERS_OUTPUTS.placeOrderFunctionName, {
      value: this.orders.placeOrder.functionName,
    });
    new CfnOutput(this, ORDERS_OUTPUTS.ordersTableName, { value: this.orders.table.tableName });
  }
}
