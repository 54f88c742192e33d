import { Validations } from 'aws-cdk-lib';
import {
  GatewayVpcEndpointAwsService,
  InterfaceVpcEndpointAwsService,
  type IVpc,
  Port,
  SecurityGroup,
  type SelectedSubnets,
  SubnetType,
  Vpc,
} from 'aws-cdk-lib/aws-ec2';
import { Construct } from 'constructs';

/** Where lease-mode records are kept (DESIGN §3.1): the idempotency table, or a Valkey cache the construct provisions. */
export type LeaseRecordsStore = 'dynamodb' | 'valkey';

/** Where `LeaseRecordsNetwork` puts the consumer: `OncelyPipelineProps`' `vpc` and `vpcEndpoints`. */
export interface LeaseRecordsNetworkProps {
  /**
   * The VPC to use.
   * @default a new VPC of 2 AZs with private isolated subnets only: no internet gateway, no NAT gateway
   */
  readonly vpc?: IVpc;
  /** Whether to add the DynamoDB gateway and SQS interface endpoints the consumer needs. */
  readonly vpcEndpoints: boolean;
}

/**
 * The network a consumer keeping its lease records in Valkey runs in: a VPC (yours, or a new one of
 * 2 AZs with private isolated subnets only: no internet gateway, no NAT gateway), the consumer's own
 * security group, and the endpoints it reaches AWS through instead of a NAT: DynamoDB's gateway
 * endpoint (free; transactional operations and the DLQ marks of a mixed consumer's table) and an SQS
 * interface endpoint (DLQ sends, visibility changes), admitting the consumer's group only.
 */
export class LeaseRecordsNetwork extends Construct {
  /** The VPC of the consumer and the cache: the one given, or the one made. */
  readonly vpc: IVpc;
  /** The consumer's subnets: the VPC's private isolated ones, else its private ones with egress; one per AZ. */
  readonly subnets: SelectedSubnets;
  /** The consumer's security group: the cache and the SQS endpoint admit it, and nothing else. */
  readonly consumerSecurityGroup: SecurityGroup;

  constructor(scope: Construct, id: string, props: LeaseRecordsNetworkProps) {
    super(scope, id);
    this.vpc = props.vpc ?? isolatedVpc(this);
    this.subnets = consumerSubnets(this.vpc);
    // Its outbound traffic is open: the isolated subnets route only to the VPC (the cache, the
    // endpoints); in your VPC, its own routes decide.
    this.consumerSecurityGroup = new SecurityGroup(this, 'ConsumerSecurityGroup', {
      vpc: this.vpc,
      description: 'The Oncely consumer: reaches the lease records cache and the VPC endpoints',
      allowAllOutbound: true,
    });
    if (props.vpcEndpoints) this.#endpoints();
  }

  #endpoints(): void {
    this.vpc.addGatewayEndpoint('DynamoDbEndpoint', {
      service: GatewayVpcEndpointAwsService.DYNAMODB,
      subnets: [{ subnets: this.subnets.subnets }],
    });
    const endpointSecurityGroup = new SecurityGroup(this, 'SqsEndpointSecurityGroup', {
      vpc: this.vpc,
      description: 'The SQS endpoint: admits the Oncely consumer only',
      allowAllOutbound: false,
    });
    endpointSecurityGroup.addIngressRule(
      this.consumerSecurityGroup,
      Port.tcp(443),
      'The Oncely consumer (HTTPS)',
    );
    this.vpc.addInterfaceEndpoint('SqsEndpoint', {
      service: InterfaceVpcEndpointAwsService.SQS,
      subnets: { subnets: this.subnets.subnets },
      securityGroups: [endpointSecurityGroup],
      // Not the VPC's CIDR, which CDK would admit by default: the consumer's group only.
      open: false,
      privateDnsEnabled: true,
    });
  }
}

/** A VPC of 2 AZs with private isolated subnets only: no internet gateway, no NAT gateway. */
function isolatedVpc(scope: Construct): Vpc {
  const vpc = new Vpc(scope, 'Vpc', {
    maxAzs: 2,
    natGateways: 0,
    subnetConfiguration: [{ name: 'Isolated', subnetType: SubnetType.PRIVATE_ISOLATED, cidrMask: 24 }],
  });
  Validations.of(vpc).acknowledge({
    id: 'AwsSolutions-VPC7',
    reason:
      'A VPC of isolated subnets holding only the consumer, its cache and its endpoints, with no route to ' +
      'or from the internet: a flow log would record the consumer’s own calls, at CloudWatch Logs’ price ' +
      'per GB. Give the pipeline a vpc of yours to have one.',
  });
  return vpc;
}

/** The consumer's subnets in `vpc`: isolated ones if it has any, else private ones with egress; one per AZ. */
function consumerSubnets(vpc: IVpc): SelectedSubnets {
  const subnetType =
    vpc.isolatedSubnets.length > 0 ? SubnetType.PRIVATE_ISOLATED : SubnetType.PRIVATE_WITH_EGRESS;
  return vpc.selectSubnets({ subnetType, onePerAz: true });
}
