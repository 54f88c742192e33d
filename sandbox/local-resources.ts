/** A queue and a table of the app as the sandbox created them, for what runs against them. */
export interface LocalQueue {
  logicalId: string;
  name: string;
  url: string;
  arn: string;
}

export interface LocalTable {
  logicalId: string;
  name: string;
  arn: string;
  /** Its stream's ARN (`Fn::GetAtt [Table, StreamArn]`), when created with a `StreamSpecification`. */
  streamArn?: string;
}
