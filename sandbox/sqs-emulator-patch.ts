import { randomUUID } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { OncelyError } from '../lambdas/common/oncely-error.js';

// Patches local-aws-sqs 2.0.2 so that the SQS emulator keeps the FIFO semantics Oncely relies on
// (DESIGN.md §2, §5, §8). Applied when the emulator starts rather than on install: npm may not run a
// dependency's install script in a user's project. The package ships one minified bundle, so each fix
// is an exact replacement of one minified snippet by readable code; anything unexpected fails loudly
// instead of leaving a silently unpatched emulator behind.

const PACKAGE = 'local-aws-sqs';
const VERSION = '2.0.2';
/** The first line of a patched bundle. Bump it when the replacements change. */
const MARKER = '/* oncely-patch v1 */';

/** One fix: `find` must occur exactly once in the bundle. */
export interface BundleReplacement {
  what: string;
  find: string;
  replace: string;
}

/** The installed local-aws-sqs is not the one the patch was written for, or cannot be rewritten. */
export class SqsEmulatorPatchError extends OncelyError {
  static override readonly errorName: string = 'SqsEmulatorPatchError';
  readonly retryable = false;
}

// The replacements use the bundle's own minified identifiers, all inside the Queue class (Xt):
// S(obj, field) reads a private field, m(obj, field, value) defines one, h(obj, name, value) a public
// one, ie(obj, field)._ is a private counter, l(obj, D, fn) gets a private method; E holds the queue's
// records, ge counts delayed ones, Wt marks a record in flight, ks issues a sequence number.
export const SQS_EMULATOR_REPLACEMENTS: readonly BundleReplacement[] = [
  {
    what: 'the receive loop (Fs)',
    find: 'Fs=function(t,e,i){return p(this,null,function*(){let r=[],n,o,a=new Promise(y=>{o=y}),d=0,c;return n=setTimeout(()=>{clearInterval(c),o()},fr+t*1e3),n.unref(),c=setInterval(()=>{d++;for(let y of S(this,E))if(!y.delayed){if(y.visible){l(this,D,Wt).call(this,y,i);let f=ke({},y);f.record=ke({},f.record),f.record.attributes=ke({},f.record.attributes),r.push(f)}if(r.length==e){clearInterval(c),clearTimeout(n),o();break}}},10),c.unref(),yield a,r.map(y=>y.record)})}',
    replace: `Fs = async function (waitSeconds, maxMessages, visibilityTimeout) {
  // Like SQS long polling: scan at once, return as soon as a scan finds messages, else poll until the wait
  // elapses (a short poll, WaitTimeSeconds 0, is a single scan).
  const deadline = Date.now() + waitSeconds * 1e3;
  for (;;) {
    const records = S(this, E);
    // SQS FIFO: no message of a group is returned while another one of it is in flight. The blocked
    // groups are fixed before the scan, so one receive may still return several messages of a group.
    const blocked = new Set();
    if (this.FifoQueue) {
      for (const entry of records) if (!entry.visible) blocked.add(entry.record.attributes.MessageGroupId);
    }
    const taken = [];
    for (const entry of records) {
      if (taken.length >= maxMessages) break;
      const group = entry.record.attributes.MessageGroupId;
      if (this.FifoQueue && blocked.has(group)) continue;
      if (entry.delayed || !entry.visible) {
        // A group is only ever served from its head: never skip past a message that cannot be taken.
        if (this.FifoQueue) blocked.add(group);
        continue;
      }
      l(this, D, Wt).call(this, entry, visibilityTimeout);
      // A snapshot, so later receives do not change what this response reports.
      taken.push({ ...entry.record, attributes: { ...entry.record.attributes } });
    }
    if (taken.length || Date.now() >= deadline) return taken;
    await new Promise((resolve) => setTimeout(resolve, 10).unref());
  }
}`,
  },
  {
    what: 'the enqueue (newRecord)',
    find: 'h(this,"newRecord",(t,e)=>{let i={visible:!0,record:t,delayed:!0},r=(isNaN(e)?this.DelaySeconds:e)*1e3;return S(this,E).push(i),ie(this,ge)._++,setTimeout(()=>{i.delayed=!1,ie(this,ge)._--},r).unref(),',
    replace: `h(this, 'newRecord', (t, e) => {
  // t is the record, e its DelaySeconds; the entry keeps the name i, which the unchanged rest uses.
  const delayMs = (isNaN(e) ? this.DelaySeconds : e) * 1e3;
  // Receivable at once unless delayed: the original always waited for a timer, even a 0 ms one, so the
  // now immediate first scan of a receive sent right after SendMessage could miss the message.
  const i = { visible: true, record: t, delayed: delayMs > 0 };
  S(this, E).push(i);
  if (i.delayed) {
    ie(this, ge)._++;
    setTimeout(() => {
      i.delayed = false;
      ie(this, ge)._--;
    }, delayMs).unref();
  }
  return `,
  },
  {
    what: 'the deduplication lookup and setRecord (Ye)',
    find: 'm(this,Ye,(t,e)=>this.DeduplicationScope=="queue"?S(this,E).find(i=>i.record.attributes.MessageDeduplicationId==e):S(this,E).find(i=>i.record.attributes.MessageGroupId==t&&i.record.attributes.MessageDeduplicationId==e));h(this,"setRecord",(t,e)=>{let i,r;t.MessageGroupId&&this.FifoQueue&&(r=S(this,Ye).call(this,t.MessageGroupId,t.MessageDeduplicationId),r?i=r.record.attributes.SequenceNumber:i=l(this,D,ks).call(this,t.MessageGroupId));let[n,o]=Xt.createRecord({MessageId:e,MessageBody:t.MessageBody,MessageAttributes:t.MessageAttributes,MessageGroupId:t.MessageGroupId,MessageDeduplicationId:t.MessageDeduplicationId,MessageSystemAttributes:t.MessageSystemAttributes,SequenceNumber:i});if(r)return n.MessageId=r.record.MessageId,{record:n,MD5OfMessageSystemAttributes:o};let a=this.newRecord(n,Number(t.DelaySeconds));return o&&(a.MD5OfMessageSystemAttributes=o),a});',
    replace: `// SQS remembers a FIFO deduplication id for 5 minutes after the send, even once the message was
// deleted; the original only compared against records still in the queue. Map, in send order:
// scoped id -> { MessageId, SequenceNumber, expiresAt }.
m(this, Ye, new Map());
h(this, 'setRecord', (input, messageId) => {
  const remembered = S(this, Ye);
  const dedupKey =
    this.FifoQueue && input.MessageGroupId && input.MessageDeduplicationId
      ? this.DeduplicationScope === 'queue'
        ? input.MessageDeduplicationId
        : JSON.stringify([input.MessageGroupId, input.MessageDeduplicationId])
      : undefined;
  const now = Date.now();
  for (const [key, seen] of remembered) {
    if (seen.expiresAt > now) break;
    remembered.delete(key);
  }
  const duplicate = dedupKey === undefined ? undefined : remembered.get(dedupKey);
  const [record, md5OfSystemAttributes] = Xt.createRecord({
    MessageId: duplicate ? duplicate.MessageId : messageId,
    MessageBody: input.MessageBody,
    MessageAttributes: input.MessageAttributes,
    MessageGroupId: input.MessageGroupId,
    MessageDeduplicationId: input.MessageDeduplicationId,
    MessageSystemAttributes: input.MessageSystemAttributes,
    SequenceNumber: duplicate
      ? duplicate.SequenceNumber
      : dedupKey === undefined
        ? undefined
        : l(this, D, ks).call(this, input.MessageGroupId),
  });
  // A duplicate is acknowledged with the original MessageId and SequenceNumber, and not enqueued.
  if (duplicate) return { record, MD5OfMessageSystemAttributes: md5OfSystemAttributes };
  if (dedupKey !== undefined) {
    remembered.set(dedupKey, {
      MessageId: record.MessageId,
      SequenceNumber: record.attributes.SequenceNumber,
      expiresAt: now + 5 * 60 * 1e3,
    });
  }
  const entry = this.newRecord(record, Number(input.DelaySeconds));
  if (md5OfSystemAttributes) entry.MD5OfMessageSystemAttributes = md5OfSystemAttributes;
  return entry;
});`,
  },
  {
    what: 'the dead-letter move (je)',
    find: 'typeof n.MessageDeduplicationId!="undefined"&&(a=n.MessageDeduplicationId);',
    replace: `// Like SQS, the FIFO DLQ copy's deduplication id is its MessageId, so that redriving it to the source
// queue within 5 minutes is not dropped as a duplicate of the original send.
typeof n.MessageDeduplicationId !== 'undefined' && (a = i);`,
  },
];

/** Where local-aws-sqs is installed: the directory of its package.json. */
export function sqsEmulatorPackageDirectory(): string {
  return dirname(createRequire(import.meta.url).resolve(`${PACKAGE}/package.json`));
}

/**
 * Patches the installed local-aws-sqs in place unless it already carries the patch. Call it before
 * the package is first loaded: a module already loaded keeps its unpatched code.
 */
export function ensureSqsEmulatorPatched(packageDirectory = sqsEmulatorPackageDirectory()): void {
  const bundlePath = join(packageDirectory, 'dist', 'index.js');
  const source = readFileSync(bundlePath, 'utf8');
  if (source.startsWith(MARKER)) return;
  const { version } = JSON.parse(readFileSync(join(packageDirectory, 'package.json'), 'utf8')) as {
    version?: string;
  };
  if (version !== VERSION) {
    throw new SqsEmulatorPatchError(
      `Oncely's SQS emulator patch matches ${PACKAGE}@${VERSION} exactly, but ${packageDirectory} holds ${version}. ` +
        `Install ${PACKAGE}@${VERSION} (the version oncely depends on).`,
    );
  }
  const patched = patchSqsEmulatorBundle(source);
  // A new file renamed over the old one, never a rewrite of it: a package manager's store may
  // hard-link the same file into other projects, and a sandbox starting at the same moment reads
  // either the whole old bundle or the whole new one.
  const temporary = `${bundlePath}.${process.pid}-${randomUUID()}.tmp`;
  try {
    writeFileSync(temporary, patched);
    renameSync(temporary, bundlePath);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw new SqsEmulatorPatchError(
      `Could not write the patched SQS emulator to ${bundlePath}. Run \`oncely local\` once as a user who may ` +
        'write to that node_modules directory.',
      { cause: error },
    );
  }
}

/** The bundle's source with every fix applied, and the marker first. */
export function patchSqsEmulatorBundle(source: string): string {
  let patched = source;
  for (const { what, find, replace } of SQS_EMULATOR_REPLACEMENTS) {
    const count = patched.split(find).length - 1;
    if (count !== 1) {
      throw new SqsEmulatorPatchError(
        `${what} was found ${count} times in ${PACKAGE}@${VERSION} dist/index.js (expected exactly once): ` +
          `the installed file differs from the one the patch was written for. Reinstall ${PACKAGE}.`,
      );
    }
    // A function, so that "$" sequences in the replacement are not treated as patterns.
    patched = patched.replace(find, () => replace);
  }
  return `${MARKER} // patched by oncely's sandbox (sqs-emulator-patch.ts)\n${patched}`;
}
