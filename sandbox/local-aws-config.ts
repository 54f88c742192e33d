/** The region every local emulator and client agrees on. */
export const LOCAL_REGION = 'us-east-1';

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
