import { build } from 'esbuild';
import { lambdaBuildOptions, lambdaBundleFile } from '../lib/constructs/bundling.js';
import { BUNDLE_FORMATS, type BuiltBundle, usesRuntimeSdk } from './bundle-size.js';

/** What a Lambda's code imports of the AWS SDK: by package, the names it imports statically, and the packages it imports only when used. */
export interface SdkImports {
  /** Package → the names imported at start (`import { DynamoDBClient } from …`). */
  atStart: Record<string, string[]>;
  /** Packages imported with `import()` (the consumer's SQS client, for its DLQ). */
  onUse: string[];
}

/** A module that loads only the AWS SDK a bundle loads, built the same way: the floor of its start-up. */
export interface SdkFloor {
  /** Its code, to be written beside the bundle as `fileName`. */
  code: Uint8Array;
  fileName: string;
  /** Its source map, when the bundle has one (`fileName` + `.map`). */
  sourceMap?: Uint8Array;
  /** The packages it loads at start. */
  packages: string[];
}

/**
 * The AWS SDK imports of `entry`: read from an unminified ES module build that leaves the SDK out,
 * where esbuild writes each of them as an `import { … } from "@aws-sdk/…"` statement or an
 * `import("@aws-sdk/…")` call.
 */
export async function sdkImportsOf(projectRoot: string, entry: string): Promise<SdkImports> {
  const { outputFiles } = await build({
    absWorkingDir: projectRoot,
    entryPoints: [entry],
    bundle: true,
    write: false,
    outfile: 'sdk-imports.mjs',
    platform: 'node',
    format: 'esm',
    external: ['@aws-sdk/*'],
    mainFields: ['module', 'main'],
    logLevel: 'error',
  });
  const code = outputFiles[0]?.text ?? '';
  const atStart: Record<string, string[]> = {};
  for (const [, names = '', name = ''] of code.matchAll(
    /^import\s*\{([^}]*)\}\s*from\s*"(@aws-sdk\/[^"]+)";/gm,
  )) {
    const imported = names
      .split(',')
      .map((specifier) => specifier.trim().split(/\s+as\s+/)[0] ?? '')
      .filter(Boolean);
    atStart[name] = [...new Set([...(atStart[name] ?? []), ...imported])].sort();
  }
  const unhandled = /^import\s+(?:\*|[\w$]+)[^;]*from\s*"@aws-sdk\//m.exec(code);
  if (unhandled) throw new Error(`${entry}: an AWS SDK import the floor cannot reproduce: ${unhandled[0]}`);
  const onUse = [
    ...new Set([...code.matchAll(/import\("(@aws-sdk\/[^"]+)"\)/g)].map((match) => match[1] ?? '')),
  ];
  return { atStart, onUse: onUse.filter((name) => !(name in atStart)).sort() };
}

/**
 * The floor of `bundle`'s start-up: a module that imports the same AWS SDK names, statically or on
 * use as the bundle does, built with the bundle's own format. With the runtime's SDK it loads those
 * packages (`require()` from CommonJS, `import` from an ES module); with the SDK bundled it is a
 * bundle of them, tree-shaken as the Lambda's is.
 */
export async function sdkFloorOf(
  projectRoot: string,
  bundle: Pick<BuiltBundle, 'format' | 'entry'>,
  imports: SdkImports,
  /** Only with the SDK bundled: more of the Lambda's imports (`import { fifoBatch } from 'oncely/consumer'`), to see what each adds. */
  more?: { name: string; imports: string },
): Promise<SdkFloor> {
  const { bundling } = BUNDLE_FORMATS[bundle.format];
  const fileName = lambdaBundleFile(bundling).replace(/^index/, more ? `floor-${more.name}` : 'sdk-floor');
  const packages = Object.keys(imports.atStart).sort();
  const esModule = fileName.endsWith('.mjs');
  if (usesRuntimeSdk(bundle.format)) {
    if (more) throw new Error('a floor with more imports is built only with the SDK bundled');
    const load = (name: string) => (esModule ? `import '${name}';\n` : `require('${name}');\n`);
    return { code: new TextEncoder().encode(packages.map(load).join('')), fileName, packages };
  }
  let count = 0;
  const lines = packages.map((name) => {
    const names = (imports.atStart[name] ?? []).map((imported) => `${imported} as n${count++}`);
    return `import { ${names.join(', ')} } from '${name}';`;
  });
  const kept = Array.from({ length: count }, (_, index) => `n${index}`);
  const onUse = imports.onUse.map((name) => `() => import('${name}')`);
  // Kept on globalThis, so that nothing the Lambda imports is tree-shaken away from its floor.
  lines.push(`globalThis.__sdkFloor = [${[...kept, ...onUse].join(', ')}];`);
  if (more) lines.push(more.imports);
  const { entryPoints: _entry, ...options } = lambdaBuildOptions(
    { projectRoot, entry: 'sdk-floor.mjs', outdir: 'floor' },
    bundling,
  );
  const { outputFiles } = await build({
    ...options,
    stdin: { contents: lines.join('\n'), resolveDir: projectRoot, sourcefile: 'sdk-floor.mjs' },
    outfile: `floor/${fileName}`,
    sourcemap: bundling.sourceMap ? 'linked' : false,
    write: false,
    logLevel: 'error',
  });
  const file = (suffix: string) => outputFiles.find((output) => output.path.endsWith(suffix))?.contents;
  const code = file(fileName);
  if (!code) throw new Error(`esbuild wrote no ${fileName} for the SDK floor of ${bundle.entry}`);
  return { code, fileName, packages, sourceMap: bundling.sourceMap ? file(`${fileName}.map`) : undefined };
}
