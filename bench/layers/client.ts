import { type PublishMessage, publish } from 'oncely/client';

// `oncely/client` alone: a producer's handler that publishes what it is given, and nothing else.
// The client has no telemetry of its own: it loads no Powertools module.
export const handler = (event: { messages: PublishMessage[] }) => publish(event.messages);
