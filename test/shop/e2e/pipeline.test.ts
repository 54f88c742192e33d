// The end-to-end suite against the target the environment names: a fresh sandbox unless
// ONCELY_TARGET=stack (docs/local.md, "The same suite on each target").
import './pipeline-suite.js';
