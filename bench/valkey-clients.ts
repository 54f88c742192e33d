// Issue 46: which Valkey client the lease store uses, by measurement. For each candidate, the
// bundle of a tiny program that connects, answers a PING, runs one EVALSHA and quits (esbuild,
// minified ESM for Node, as a Lambda is bundled), its install size (the package and what it pulls,
// a native binary included), and its cold start: from `node` starting to the first PING answered
// against a local redis-server, the median of 15 fresh processes per Node binary.
//
// The candidates are installed in a scratch directory outside the repository, never in it:
//   mkdir -p /tmp/valkey-clients && cd /tmp/valkey-clients && npm init -y &&
//   npm install iovalkey ioredis redis @valkey/valkey-glide
//   npx tsx bench/valkey-clients.ts [--scratch /tmp/valkey-clients] [--node /path/to/node]...
// It prints a Markdown table (bench/VALKEY-CLIENTS.md keeps one run's, with the choice).

import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { freePort } from '../sandbox/free-port.js';
import { nodeBinaryFor } from '../sandbox/node-binary.js';
import { trackProcessGroup } from '../sandbox/process-group.js';

/** Fresh processes per client and Node binary. */
const RUNS = 15;

/** The script every program runs by SHA: a `return 1`, loaded first by EVAL when the server lacks it. */
const SCRIPT = 'return 1';

interface Candidate {
  /** The npm package, as installed in the scratch directory. */
  name: string;
  /** The program: `PORT` is in the environment; it prints `performance.now()` when PING is answered. */
  program: string;
  /** Packages esbuild leaves out (a native binary it cannot bundle), counted in the install size. */
  external?: string[];
}

/** Each client's program: connect, PING (time it), EVALSHA with the NOSCRIPT fallback, quit. */
const CANDIDATES: Candidate[] = [
  {
    name: 'iovalkey',
    program: `import { Redis } from 'iovalkey';
const client = new Redis({ port: Number(process.env.PORT), host: '127.0.0.1' });
await client.ping();
console.log(performance.now());
const sha = ${JSON.stringify(sha1(SCRIPT))};
await client.evalsha(sha, 0).catch((e) => (/NOSCRIPT/.test(e.message) ? client.eval(${JSON.stringify(SCRIPT)}, 0) : Promise.reject(e)));
await client.quit();`,
  },
  {
    name: 'ioredis',
    program: `import { Redis } from 'ioredis';
const client = new Redis({ port: Number(process.env.PORT), host: '127.0.0.1' });
await client.ping();
console.log(performance.now());
const sha = ${JSON.stringify(sha1(SCRIPT))};
await client.evalsha(sha, 0).catch((e) => (/NOSCRIPT/.test(e.message) ? client.eval(${JSON.stringify(SCRIPT)}, 0) : Promise.reject(e)));
await client.quit();`,
  },
  {
    name: 'redis',
    program: `import { createClient } from 'redis';
const client = createClient({ socket: { port: Number(process.env.PORT), host: '127.0.0.1' } });
await client.connect();
await client.ping();
console.log(performance.now());
const sha = ${JSON.stringify(sha1(SCRIPT))};
await client.evalSha(sha).catch((e) => (/NOSCRIPT/.test(e.message) ? client.eval(${JSON.stringify(SCRIPT)}) : Promise.reject(e)));
await client.quit();`,
  },
  {
    name: '@redis/client',
    program: `import { createClient } from '@redis/client';
const client = createClient({ socket: { port: Number(process.env.PORT), host: '127.0.0.1' } });
await client.connect();
await client.ping();
console.log(performance.now());
const sha = ${JSON.stringify(sha1(SCRIPT))};
await client.evalSha(sha).catch((e) => (/NOSCRIPT/.test(e.message) ? client.eval(${JSON.stringify(SCRIPT)}) : Promise.reject(e)));
await client.quit();`,
  },
  {
    name: '@valkey/valkey-glide',
    // Its Rust core is a native addon in a per-platform package: not bundlable, shipped beside.
    external: ['@valkey/valkey-glide-*'],
    program: `import { GlideClient, Script } from '@valkey/valkey-glide';
const client = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: Number(process.env.PORT) }] });
await client.ping();
console.log(performance.now());
// invokeScript sends EVALSHA, and loads the script on NOSCRIPT.
await client.invokeScript(new Script(${JSON.stringify(SCRIPT)}));
client.close();`,
  },
];

function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}

/** Apparent bytes of the files under `path`. */
function bytesUnder(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, entry) => sum + bytesUnder(join(path, entry)), 0);
}

/** The package directories `name` pulls in (itself, its dependencies, their dependencies…), as npm laid them out flat. */
function closure(scratch: string, name: string, seen = new Set<string>()): Set<string> {
  const directory = join(scratch, 'node_modules', name);
  if (seen.has(directory) || !existsSync(directory)) return seen;
  seen.add(directory);
  const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    optionalDependencies?: Record<string, string>;
  };
  for (const dependency of Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies })) {
    closure(scratch, dependency, seen);
  }
  return seen;
}

function installedVersion(scratch: string, name: string): string {
  const manifest = JSON.parse(readFileSync(join(scratch, 'node_modules', name, 'package.json'), 'utf8'));
  return manifest.version as string;
}

async function bundle(scratch: string, candidate: Candidate, index: number) {
  const entry = join(scratch, `entry-${index}.mjs`);
  const outfile = join(scratch, `bundle-${index}.mjs`);
  writeFileSync(entry, candidate.program);
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'esm',
    external: candidate.external,
    // CommonJS dependencies call require() and read __dirname: give the ESM bundle both, as Lambda bundles do.
    banner: {
      js:
        "import{createRequire as __cr}from'node:module';import{dirname as __dn}from'node:path';" +
        "import{fileURLToPath as __fp}from'node:url';const require=__cr(import.meta.url);" +
        'const __dirname=__dn(__fp(import.meta.url));',
    },
    logLevel: 'error',
  });
  const code = readFileSync(outfile);
  return { outfile, bytes: code.length, gzipBytes: gzipSync(code).length };
}

/** Milliseconds from the process's start to its first PING answered, `RUNS` fresh processes, sorted. */
async function coldStarts(node: string, program: string, port: number): Promise<number[]> {
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(node, [program], { env: { ...process.env, PORT: String(port) } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.on('exit', (code) =>
        code === 0 ? resolve(stdout) : reject(new Error(`${program}: ${stderr.slice(-800)}`)),
      );
    });
    times.push(Number(output.trim().split('\n')[0]));
  }
  return times.sort((a, b) => a - b);
}

const median = (sorted: number[]) => sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;

async function main() {
  const args = process.argv.slice(2);
  const option = (name: string) => args.flatMap((arg, i) => (arg === name ? [args[i + 1] ?? ''] : []));
  const scratch = option('--scratch')[0] ?? '/tmp/valkey-clients';
  const nodes = option('--node');
  if (nodes.length === 0) {
    nodes.push(process.execPath);
    const node24 = nodeBinaryFor('nodejs24.x');
    if (node24.matches && node24.path !== process.execPath) nodes.push(node24.path);
  }
  const versions = nodes.map(
    (node) => spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim() || node,
  );

  const port = await freePort();
  const server = trackProcessGroup(
    spawn('/usr/bin/redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], {
      detached: true,
      stdio: 'ignore',
    }),
  );
  try {
    await waitForServer(port);
    const rows: string[] = [];
    for (const [index, candidate] of CANDIDATES.entries()) {
      const bundled = await bundle(scratch, candidate, index);
      const packages = closure(scratch, candidate.name);
      const installBytes = [...packages].reduce((sum, directory) => sum + bytesUnder(directory), 0);
      const medians: string[] = [];
      for (const node of nodes) {
        const times = await coldStarts(node, bundled.outfile, port);
        medians.push(`${median(times).toFixed(0)} (${times[0]?.toFixed(0)}–${times.at(-1)?.toFixed(0)})`);
      }
      rows.push(
        `| \`${candidate.name}\` ${installedVersion(scratch, candidate.name)} | ${kb(bundled.bytes)} | ` +
          `${kb(bundled.gzipBytes)} | ${packages.size} | ${mb(installBytes)} | ${medians.join(' | ')} |`,
      );
      console.error(`measured ${candidate.name}`);
    }
    console.log(
      `| client | bundle KB | gzipped KB | packages | install MB | ${versions
        .map((version) => `cold start ms, Node ${version}: median (min–max)`)
        .join(' | ')} |`,
    );
    console.log(`|---|--:|--:|--:|--:|${versions.map(() => '--:|').join('')}`);
    for (const row of rows) console.log(row);
    console.log(`\n${RUNS} fresh processes per cell; redis-server ${serverVersion()} on 127.0.0.1.`);
  } finally {
    await server.stop();
  }
}

const kb = (bytes: number) => (bytes / 1000).toFixed(1);
const mb = (bytes: number) => (bytes / 1e6).toFixed(2);

function serverVersion(): string {
  const output = spawnSync('/usr/bin/redis-server', ['--version'], { encoding: 'utf8' }).stdout;
  return /v=(\S+)/.exec(output)?.[1] ?? 'unknown';
}

/** Until the server answers a PING on `port` (bounded: 200 tries). */
async function waitForServer(port: number): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const answered = spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' });
    if (answered.stdout?.trim() === 'PONG') return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`redis-server on ${port} did not answer`);
}

await main();
