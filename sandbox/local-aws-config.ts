/** The region every local emulator and client agrees on. */
export const LOCAL_REGION = 'us-east-1';

/** The account local ARNs name (the SQS emulator's and the sandbox's Lambda functions'). */
export const LOCAL_ACCOUNT_ID = '123456789012';

/** The ARN of a local Lambda function. */
export function localFunctionArn(name: string): string {
  return `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:function:${name}`;
}

/**
 * SDK client configuration for a loopback emulator. The credentials are placeholders: the
 * emulators accept any, and fixed ones keep a developer's real AWS credentials out of the sandbox.
 */
export function localAwsConfig(endpoint: string) {
  return {
    endpoint,
    region: LOCAL_REGION,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };
}
