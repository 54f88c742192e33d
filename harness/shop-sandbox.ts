import { fileURLToPath } from 'node:url';
import { type Sandbox, type ServiceEndpoints, startSandbox } from '../sandbox/local-sandbox.js';

/** The example shop's CDK app, which the sandbox runs. */
const SHOP_APP = fileURLToPath(new URL('..', import.meta.url));

/**
 * The shop's stack in the sandbox as the chaos pipeline run and the soak drive it: its functions'
 * requests routed through fault proxies, e-mails to a stand-in gateway that may hang, the
 * functions' output dropped, and every invocation that died counted.
 */
export function startShopUnderFaults(options: {
  gatewayUrl: string;
  routeFunctions: (emulators: ServiceEndpoints) => Promise<ServiceEndpoints>;
  onCrash: () => void;
  /** How often the schedules run (the outbox's sweeper, the monitor); each rule's own rate by default. */
  scheduleIntervalMs?: number;
  /** The shop's cloud assembly, synthesised before (a test run's shared one); synthesised anew by default. */
  cloudAssembly?: string;
}): Promise<Sandbox> {
  return startSandbox({
    appDirectory: SHOP_APP,
    cloudAssembly: options.cloudAssembly,
    environment: {
      NOTIFICATION_URL: options.gatewayUrl,
      // Under the consumer's 2 s timeout: a hung send is an unknown outcome, not a dead invocation.
      NOTIFICATION_TIMEOUT_MS: '800',
      POWERTOOLS_LOG_LEVEL: 'CRITICAL',
    },
    functionOutput: () => undefined,
    scheduleIntervalMs: options.scheduleIntervalMs,
    onBatch: (_, report) => {
      if (report.functionError) options.onCrash();
    },
    routeFunctions: options.routeFunctions,
  });
}
