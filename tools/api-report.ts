import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CompilerState,
  Extractor,
  ExtractorConfig,
  ExtractorLogLevel,
  type ExtractorMessage,
  type IConfigFile,
} from '@microsoft/api-extractor';
import packageJson from '../package.json' with { type: 'json' };

// The API report (DESIGN §10): one `docs/api/<entry>.api.md` per public entry point, API
// Extractor's listing of what the entry point's built declarations (dist/**/*.d.ts) export. The
// configuration is built here rather than kept as one api-extractor.json per entry point.

const ROOT = join(import.meta.dirname, '..');
export const REPORT_FOLDER = join(ROOT, 'docs', 'api');
/** Entry points whose surface is no contract: `oncely/internal` says so, `package.json` is data. */
const UNREPORTED = ['./internal', './package.json'];

export interface EntryPoint {
  /** `consumer` for `oncely/consumer`: the report is `docs/api/consumer.api.md`. */
  name: string;
  declarations: string;
}

export function entryPoints(): EntryPoint[] {
  return Object.entries(packageJson.exports)
    .filter(([subpath]) => !UNREPORTED.includes(subpath))
    .map(([subpath, target]) => ({
      name: subpath.slice(2),
      declarations: join(ROOT, (target as { types: string }).types),
    }));
}

function configFor(entry: EntryPoint, scratch: string, all: EntryPoint[]): ExtractorConfig {
  const configObject: IConfigFile = {
    projectFolder: ROOT,
    mainEntryPointFilePath: entry.declarations,
    // API Extractor bundles its own TypeScript; it reads only the built declarations.
    compiler: {
      overrideTsconfig: {
        compilerOptions: {
          target: 'es2023',
          lib: ['es2023'],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          types: ['node'],
          // Checked as a user's compiler without skipLibCheck checks them: a declaration that
          // names a member stripped as @internal fails here, not in their build.
          skipLibCheck: false,
        },
        files: all.map(({ declarations }) => declarations),
      },
    },
    apiReport: {
      enabled: true,
      reportFileName: entry.name,
      reportFolder: REPORT_FOLDER,
      reportTempFolder: scratch,
    },
    // The doc model (JSON) carries each declaration's comment: the tests read it for `@default`.
    docModel: { enabled: true, apiJsonFilePath: join(scratch, `${entry.name}.api.json`) },
    dtsRollup: { enabled: false },
    tsdocMetadata: { enabled: false },
    messages: {
      // What is wrong with the surface itself (a type used but not exported, a broken link) is
      // written into the report, where a reviewer sees it in the diff.
      extractorMessageReporting: {
        default: { logLevel: ExtractorLogLevel.Warning, addToApiReportFile: true },
        // One package, one release: no `@public`/`@beta` tags to ask for.
        'ae-missing-release-tag': { logLevel: ExtractorLogLevel.None },
        // Marked "(undocumented)" in place; listed again with line numbers, it would churn on every edit.
        'ae-undocumented': { logLevel: ExtractorLogLevel.None },
      },
      tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.Warning, addToApiReportFile: true } },
    },
  };
  return ExtractorConfig.prepare({
    configObject,
    configObjectFullPath: join(ROOT, 'api-extractor.json'),
    packageJsonFullPath: join(ROOT, 'package.json'),
  });
}

export interface ReportResult {
  entry: string;
  /** The built surface differs from the committed report. */
  changed: boolean;
  /** The compiler's errors in dist/'s declarations (checked without skipLibCheck), and API Extractor's. */
  problems: string[];
  /** API Extractor's doc model of the entry point (`.api.json`): every declaration with its comment. */
  model: ApiItem;
}

/** The part of API Extractor's doc model the tests read. */
export interface ApiItem {
  kind: string;
  name?: string;
  docComment?: string;
  isOptional?: boolean;
  members?: ApiItem[];
}

/**
 * Compares each entry point's built declarations with its committed report; with `update`, writes
 * the reports instead. dist/ must be built first (`npm run build`).
 */
export function apiReports({ update }: { update: boolean }): ReportResult[] {
  if (update) mkdirSync(REPORT_FOLDER, { recursive: true });
  const scratch = mkdtempSync(join(tmpdir(), 'oncely-api-'));
  try {
    const all = entryPoints();
    const configs = all.map((entry) => configFor(entry, scratch, all));
    // One program for every entry point: they share most of their declarations.
    const [first] = configs;
    if (!first) throw new Error('package.json exports no entry point to report');
    const compilerState = CompilerState.create(first, {
      additionalEntryPoints: all.map(({ declarations }) => declarations),
    });
    return all.map((entry, index) => {
      const problems: string[] = [];
      const messageCallback = (message: ExtractorMessage) => {
        message.handled = true;
        // The compiler's complaints about dist/ (the report's own are written into it), not about
        // the dependencies' declarations.
        const inDist = message.sourceFilePath?.startsWith(join(ROOT, 'dist')) ?? false;
        if ((message.category === 'Compiler' && inDist) || message.logLevel === ExtractorLogLevel.Error) {
          problems.push(message.formatMessageWithLocation(ROOT));
        }
      };
      const result = Extractor.invoke(configs[index] as ExtractorConfig, {
        localBuild: update,
        compilerState,
        messageCallback,
      });
      const model = JSON.parse(readFileSync(join(scratch, `${entry.name}.api.json`), 'utf8')) as ApiItem;
      return { entry: entry.name, changed: result.apiReportChanged, problems, model };
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

// `npm run api`: rewrite the reports from dist/.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const results = apiReports({ update: true });
  for (const { entry, changed, problems } of results) {
    console.log(`docs/api/${entry}.api.md ${changed ? 'updated' : 'unchanged'}`);
    for (const problem of problems) console.error(`  ${problem}`);
  }
  if (results.some(({ problems }) => problems.length > 0)) process.exitCode = 1;
}
