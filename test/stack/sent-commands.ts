import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { build } from 'esbuild';
import { lambdaBuildOptions } from '../../lib/constructs/bundling.js';

/**
 * What AWS requests a function's code can send, read from its source: the IAM actions its role
 * needs. A static over-approximation, in three steps:
 *
 * 1. esbuild bundles the entry as the construct does (`lambdaBuildOptions`) and its metafile names
 *    the modules under `lambdas/` the bundle keeps (tree-shaken modules drop out);
 * 2. each module is cut into units (top-level declarations, class members), and from the roots
 *    every unit named by a reachable unit is reachable, by name alone: `x.read(` reaches every
 *    member named `read`, a bare `read` every function or class so named (more than the code
 *    calls, never less, but for a member reached only by a computed name (`x['read']`) or a nested
 *    destructuring);
 * 3. each reachable `new XxxCommand(` (or `paginateXxx(`) is an action of {@link ACTIONS}; a
 *    transaction's actions are the item kinds (`Put:`, `Update:` …) its module's reachable units
 *    write; a Query is on an index where its unit, or a unit of its module it calls, names one.
 */
export interface SentRequest {
  /** The IAM action, e.g. `dynamodb:UpdateItem`. */
  action: string;
  /** For DynamoDB: the table itself or one of its indexes (`IndexName` in the request). */
  on?: 'table' | 'index';
  /** Where it is sent, as `file:unit`, for the test's messages. */
  from: string;
}

/** Each SDK command the package sends, and the IAM action that authorises it (undefined: per item). */
const ACTIONS: Record<string, string | undefined> = {
  GetCommand: 'dynamodb:GetItem',
  PutCommand: 'dynamodb:PutItem',
  UpdateCommand: 'dynamodb:UpdateItem',
  UpdateItemCommand: 'dynamodb:UpdateItem',
  DeleteCommand: 'dynamodb:DeleteItem',
  QueryCommand: 'dynamodb:Query',
  BatchGetCommand: 'dynamodb:BatchGetItem',
  // Authorised per item: Put, Update, Delete, ConditionCheck (below).
  TransactWriteCommand: undefined,
  SendMessageCommand: 'sqs:SendMessage',
  // A batch is authorised as its single sends.
  SendMessageBatchCommand: 'sqs:SendMessage',
  DeleteMessageCommand: 'sqs:DeleteMessage',
  // A batch is authorised as its single changes (standardBatch's retry delays, DESIGN §5.1).
  ChangeMessageVisibilityBatchCommand: 'sqs:ChangeMessageVisibility',
  GetQueueAttributesCommand: 'sqs:GetQueueAttributes',
  InvokeCommand: 'lambda:InvokeFunction',
};
const TRANSACTION_ITEMS: Record<string, string> = {
  Put: 'dynamodb:PutItem',
  Update: 'dynamodb:UpdateItem',
  Delete: 'dynamodb:DeleteItem',
  ConditionCheck: 'dynamodb:ConditionCheckItem',
};

const ROOT = resolve(import.meta.dirname, '../..');

/** The modules under `lambdas/` that the bundle of `entry` keeps, relative to the repository. */
export async function bundledModules(entry: string): Promise<string[]> {
  const outdir = mkdtempSync(join(tmpdir(), 'oncely-sent-'));
  try {
    const { metafile } = await build({
      ...lambdaBuildOptions({ projectRoot: ROOT, entry: relative(ROOT, resolve(ROOT, entry)), outdir }),
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const [output] = Object.values(metafile.outputs);
    return Object.entries(output?.inputs ?? {})
      .filter(([path, input]) => path.startsWith('lambdas/') && input.bytesInOutput > 0)
      .map(([path]) => path);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

interface Unit {
  file: string;
  name: string;
  /** The class it belongs to, for members. */
  owner?: string;
  text: string;
}

/**
 * The requests the code reachable from `roots` (unit names) in `modules` can send. `notCalled`
 * (`Class.member` or a function's name) are units the roots reach by name but never call, and
 * are not followed; `met` says which of them the walk came upon, so that a stale one shows.
 */
export function sentRequests(
  modules: readonly string[],
  roots: readonly string[],
  notCalled: readonly string[] = [],
): { requests: SentRequest[]; met: string[] } {
  const units = modules.flatMap((file) => {
    const source = readFileSync(join(ROOT, file), 'utf8');
    const found = unitsOf(file, source);
    // The cutting must lose no request: as many commands in the units as on the source's code lines.
    const onCodeLines = source.split('\n').filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line));
    const count = (text: string) => text.match(/\bnew\s+\w+Command\s*\(|\bpaginate\w+\s*\(/g)?.length ?? 0;
    if (count(found.map((unit) => unit.text).join('\n')) !== count(onCodeLines.join('\n'))) {
      throw new Error(`sent-commands.ts lost a request of ${file} while reading it: fix unitsOf or blank`);
    }
    return found;
  });
  const byName = new Map<string, Unit[]>();
  for (const unit of units) byName.set(unit.name, [...(byName.get(unit.name) ?? []), unit]);
  const reached = new Set<Unit>();
  const met = new Set<Unit>();
  const pending = roots.flatMap((name) => byName.get(name) ?? []);
  if (pending.length === 0) throw new Error(`none of ${roots.join(', ')} is in ${modules.join(', ')}`);
  while (pending.length > 0) {
    const unit = pending.pop() as Unit;
    if (reached.has(unit) || met.has(unit)) continue;
    if (notCalled.includes(qualified(unit))) {
      met.add(unit);
      continue;
    }
    reached.add(unit);
    const { bare, members } = referencesOf(unit.text);
    for (const name of bare) {
      pending.push(...(byName.get(name) ?? []).filter((other) => other.owner === undefined));
      // A class named reaches its constructor and field initialisers.
      pending.push(...units.filter((other) => other.owner === name && other.name === 'constructor'));
    }
    for (const name of members) {
      pending.push(...(byName.get(name) ?? []).filter((other) => other.owner !== undefined));
    }
  }
  const requests: SentRequest[] = [];
  for (const unit of reached) {
    const sameFile = [...reached].filter((other) => other.file === unit.file);
    const commands = [
      ...[...unit.text.matchAll(/\bnew\s+(\w+Command)\s*\(/g)].map(([, name]) => name as string),
      ...[...unit.text.matchAll(/\bpaginate(\w+)\s*\(/g)].map(([, name]) => `${name}Command`),
    ];
    for (const command of commands) {
      if (!(command in ACTIONS)) {
        throw new Error(`${unit.file}: ${command} is not in sent-commands.ts's ACTIONS: add its IAM action`);
      }
      const from = `${unit.file}:${qualified(unit)}`;
      const action = ACTIONS[command];
      if (action === undefined) {
        const items = sameFile.flatMap((other) => [
          ...other.text.matchAll(/\b(Put|Update|Delete|ConditionCheck)\s*:/g),
        ]);
        for (const [, kind] of items)
          requests.push({ action: TRANSACTION_ITEMS[kind as string] as string, on: 'table', from });
        continue;
      }
      const called = sameFile.filter(
        (other) => other !== unit && new RegExp(`(^|[^\\w$#])${escapeName(other.name)}\\b`).test(unit.text),
      );
      const on = action.startsWith('dynamodb:')
        ? [unit, ...called].some((u) => /\bIndexName\b/.test(u.text))
          ? 'index'
          : 'table'
        : undefined;
      requests.push({ action, on, from });
    }
  }
  return { requests, met: [...met].map(qualified) };
}

/**
 * The names a unit's code uses: bare ones (a function, a class, a constant) and members (after a
 * `.` or as `#private`, and those taken apart by a destructuring `{ a, b }`). A local variable
 * named like a method (`const read = …`) then reaches no method.
 */
function referencesOf(text: string): { bare: Set<string>; members: Set<string> } {
  const bare = new Set<string>();
  const members = new Set<string>();
  for (const [, dot, name] of text.matchAll(/(\.{3}|\.\s*)?(#?[A-Za-z_$][\w$]*)/g)) {
    // A spread (`...options`) names a value, as a bare name does.
    if ((dot !== undefined && dot !== '...') || name?.startsWith('#')) members.add(name as string);
    else bare.add(name as string);
  }
  for (const [, pattern] of text.matchAll(/(?:\b(?:const|let|var)\s*|\(\s*)\{([^{}]*)\}/g)) {
    for (const name of pattern?.match(/[A-Za-z_$][\w$]*/g) ?? []) members.add(name);
  }
  return { bare, members };
}

function qualified(unit: Unit): string {
  return unit.owner ? `${unit.owner}.${unit.name}` : unit.name;
}

function escapeName(name: string): string {
  return name.replace(/[$#]/g, (c) => `\\${c}`);
}

/**
 * A module cut into units. The code is Biome-formatted: top-level declarations start in column 0,
 * class members in column 2, and a class ends at a `}` in column 0. Comments and the text of
 * strings are blanked first, so only code names things.
 */
function unitsOf(file: string, source: string): Unit[] {
  const lines = blank(source).split('\n');
  const units: Unit[] = [];
  let current: Unit | undefined;
  let owner: string | undefined;
  for (const line of lines) {
    const top =
      /^(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|const|let|var|class|enum)\s+([\w$]+)/.exec(
        line,
      );
    const member = owner
      ? /^ {2}(?:(?:public|private|protected|static|readonly|override|abstract|async|get|set|declare|accessor)\s+)*\*?(#?[\w$]+)\s*[(<=:;?!]/.exec(
          line,
        )
      : null;
    if (top) {
      owner = /\bclass\s/.test(line) ? top[1] : undefined;
      // A class's header (extends, fields) counts as its constructor: both run on `new`.
      current = { file, name: owner ? 'constructor' : (top[1] as string), owner, text: '' };
      units.push(current);
    } else if (member) {
      current = { file, name: member[1] as string, owner, text: '' };
      units.push(current);
    } else if (owner && /^}/.test(line)) {
      owner = undefined;
    }
    if (current) current.text += `${line}\n`;
  }
  return units;
}

/**
 * The source with comments and the contents of string literals replaced by spaces (line breaks
 * kept); template literals keep their `${…}` code. A `/` starts a regular expression where an
 * operand is expected, judged by the previous code character.
 */
const OPERAND_BEFORE = new Set(['return', 'typeof', 'case', 'in', 'of', 'void', 'throw', 'await', 'yield']);

function blank(source: string): string {
  let out = '';
  let i = 0;
  const templateDepths: number[] = [];
  let braces = 0;
  let lastCode = '';
  let lastWord = '';
  const spaces = (text: string) => text.replace(/[^\n]/g, ' ');
  while (i < source.length) {
    const c = source[i] as string;
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i);
      const stop = end === -1 ? source.length : end;
      out += spaces(source.slice(i, stop));
      i = stop;
    } else if (c === '/' && next === '*') {
      const stop = source.indexOf('*/', i + 2) + 2;
      out += spaces(source.slice(i, stop));
      i = stop;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < source.length && source[j] !== c) j += source[j] === '\\' ? 2 : 1;
      out += c + spaces(source.slice(i + 1, j)) + c;
      i = j + 1;
      lastCode = c;
    } else if (c === '`' || (c === '}' && braces === templateDepths.at(-1))) {
      if (c === '}') templateDepths.pop();
      let j = i + 1;
      while (j < source.length && source[j] !== '`' && !(source[j] === '$' && source[j + 1] === '{')) {
        j += source[j] === '\\' ? 2 : 1;
      }
      out += c + spaces(source.slice(i + 1, j));
      if (source[j] === '$') {
        templateDepths.push(braces);
        out += '${';
        i = j + 2;
      } else {
        out += '`';
        i = j + 1;
      }
      lastCode = '`';
    } else if (c === '/' && (/^$|[(,=:[!&|?{};+\-*%<>~^]/.test(lastCode) || OPERAND_BEFORE.has(lastWord))) {
      let j = i + 1;
      let inClass = false;
      while (j < source.length && (inClass || source[j] !== '/')) {
        if (source[j] === '[') inClass = true;
        else if (source[j] === ']') inClass = false;
        j += source[j] === '\\' ? 2 : 1;
      }
      out += `/${spaces(source.slice(i + 1, j))}/`;
      i = j + 1;
      lastCode = '/';
    } else {
      if (c === '{') braces += 1;
      if (c === '}') braces -= 1;
      if (/[\w$]/.test(c)) lastWord = /[\w$]/.test(lastCode) ? lastWord + c : c;
      if (!/\s/.test(c)) lastCode = c;
      out += c;
      i += 1;
    }
  }
  return out;
}
