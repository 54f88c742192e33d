// The end-to-end suite on a fresh sandbox of the shop's standard-queue stack, every batch delivered
// twice at once and again later, as `ONCELY_QUEUE_TYPE=standard` asks (docs/local.md, "The same
// suite on each target").
process.env.ONCELY_QUEUE_TYPE = 'standard';
await import('./pipeline-suite.js');

// A module, for the top-level await.
export {};
