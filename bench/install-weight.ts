/**
 * `npm run bench:install`: what each way of installing Oncely pulls into a project's node_modules
 * (packages, MB on disk), against Powertools' idempotency and batch utilities with the same SDK
 * clients and Middy, each into a new project from this run's registry (the newest versions, as a
 * new user gets them). Prints the table and writes it to bench/INSTALL.md.
 */
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type InstallWeight, installWeight } from './installs.js';
import {
  npm,
  packOncely,
  type ReadmeInstall,
  readmeInstallCommands,
  scratchDirectory,
} from './scratch-project.js';

const ROOT = join(import.meta.dirname, '..');
const OUTPUT = join(ROOT, 'bench', 'INSTALL.md');
const SDK = ['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb'];

interface Way {
  readonly name: string;
  readonly commands: (readme: ReadmeInstall[], tarball: string) => string[][];
}

const WAYS: Way[] = [
  {
    name: 'a producer: `oncely/client`, `oncely/outbox`',
    commands: (_readme, tarball) => [['install', tarball, ...SDK]],
  },
  {
    name: "a consumer's Lambda code (README, Install, first line)",
    commands: (readme) => readme.slice(0, 1).map(({ args }) => args),
  },
  {
    name: 'a consumer and its CDK app (README, Install)',
    commands: (readme) => readme.filter(({ section }) => section === 'Install').map(({ args }) => args),
  },
  {
    name: '… and the local sandbox (README, Run it on your machine)',
    commands: (readme) => readme.map(({ args }) => args),
  },
  {
    name: 'Powertools idempotency + batch, for comparison',
    commands: () => [
      [
        'install',
        '@aws-lambda-powertools/idempotency',
        '@aws-lambda-powertools/batch',
        ...SDK,
        '@middy/core',
      ],
    ],
  },
];

async function measure(way: Way, readme: ReadmeInstall[], tarball: string) {
  const project = scratchDirectory({ 'package.json': JSON.stringify({ name: 'service', private: true }) });
  try {
    const commands = way.commands(readme, tarball);
    for (const args of commands) await npm(project, args);
    return { way, commands, weight: installWeight(project) };
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
}

function table(rows: { way: Way; commands: string[][]; weight: InstallWeight }[], tarball: string): string {
  const shown = (args: string[]) => `\`npm ${args.join(' ').replace(tarball, 'oncely')}\``;
  return [
    '| installing | packages | MB on disk | `.jar` files | commands |',
    '|---|--:|--:|--:|---|',
    ...rows.map(
      ({ way, commands, weight }) =>
        `| ${way.name} | ${weight.packages} | ${weight.megabytes.toFixed(1)} | ${weight.jars} | ${commands.map(shown).join('<br>')} |`,
    ),
  ].join('\n');
}

const scratch = scratchDirectory({});
try {
  const tarball = await packOncely(scratch);
  const readme = readmeInstallCommands(tarball);
  const rows = [];
  for (const way of WAYS) rows.push(await measure(way, readme, tarball));
  const npmVersion = execFileSync('npm', ['--version'], { encoding: 'utf8' }).trim();
  const markdown = [
    '# What installing Oncely pulls',
    '',
    '`npm run bench:install` writes this file: each way of installing into a new project, from the',
    "registry's newest versions (the SDK clients, Middy, the CDK), Oncely from its packed tarball.",
    'Sizes are disk usage (allocated blocks, as `du` counts them) in MB of 10^6 bytes; packages count',
    'every copy in node_modules, nested ones too.',
    '',
    table(rows, tarball),
    '',
    'In 0.2.0, before issue 27, every way of installing pulled the sandbox (DynamoDB Local: 109 `.jar`',
    'files), `aws-cdk-lib` and esbuild: a producer took 298 MB.',
    '',
    `Measured ${new Date().toISOString().slice(0, 10)} with Node.js ${process.version} and npm ${npmVersion}.`,
    '',
  ].join('\n');
  writeFileSync(OUTPUT, markdown);
  console.log(`${markdown}\nWritten: ${relative(ROOT, OUTPUT)}`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
