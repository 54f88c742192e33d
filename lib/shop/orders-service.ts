import { fileURLToPath } from 'node:url';
import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { OncelyOutbox, type OncelyPipeline, oncelyBundling } from 'oncely/cdk';
import { ORDERS_ENVIRONMENT } from '../../lambdas/shop/orders/environment.js';

export interface OrdersServiceProps {
  /** The pipeline whose queue the OrderPlaced events go to. */
  readonly pipeline: OncelyPipeline;
  readonly removalPolicy: RemovalPolicy;
  readonly deletionProtection: boolean;
}

/**
 * The shop's orders service: the orders table, which also holds its transactional outbox, and the
 * PlaceOrder function an API would invoke. An order and its OrderPlaced event commit together.
 */
export class OrdersService extends Construct {
  readonly table: Table;
  readonly outbox: OncelyOutbox;
  readonly placeOrder: NodejsFunction;

  constructor(scope: Construct, id: string, props: OrdersServiceProps) {
    super(scope, id);
    // String keys and a stream of new images: what OncelyOutbox needs of a table it shares.
    this.table = new Table(this, 'OrdersTable', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      stream: StreamViewType.NEW_IMAGE,
      timeToLiveAttribute: 'expiresAt',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: props.deletionProtection,
      removalPolicy: props.removalPolicy,
    });
    this.outbox = new OncelyOutbox(this, 'Outbox', {
      pipeline: props.pipeline,
      table: this.table,
      serviceName: 'shop',
    });

    const logGroup = new LogGroup(this, 'PlaceOrderLogs', {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: props.removalPolicy,
    });
    const role = new Role(this, 'PlaceOrderRole', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
    });
    logGroup.grantWrite(role);
    this.placeOrder = new NodejsFunction(this, 'PlaceOrder', {
      entry: fileURLToPath(new URL('../../lambdas/shop/orders/handler.ts', import.meta.url)),
      handler: 'handler',
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      timeout: Duration.seconds(10),
      memorySize: 256,
      role,
      logGroup,
      environment: { [ORDERS_ENVIRONMENT.ordersTableName]: this.table.tableName },
      bundling: oncelyBundling(),
    });
    // The outbox's items, and the function's OUTBOX_* variables.
    this.outbox.grantWrite(this.placeOrder);
    // The order itself, in the same transaction: its own key space only.
    this.placeOrder.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:PutItem'],
        resources: [this.table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['order#*'] } },
      }),
    );
  }
}
