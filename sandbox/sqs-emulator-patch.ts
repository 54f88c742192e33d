import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { OncelyError } from '../lambdas/common/oncely-error.js';

// Patches local-aws-sqs 2.0.2 so that the SQS emulator answers as SQS does where Oncely's tests depend
// on it (DESIGN.md §2, §5, §8; docs/local.md's table of the SQS emulator). Applied when the emulator
// starts rather than on install: npm may not run a dependency's install script in a user's project. The
// package ships one minified bundle, so each fix is an exact replacement of one minified snippet by
// readable code; anything unexpected fails loudly instead of leaving a silently unpatched emulator behind.
//
// The patched bundle is written beside the package's own (dist/index.oncely-vN.js) and loaded from
// there: the package's dist/index.js is left as installed, so two Oncely versions sharing one
// node_modules each run their own patch. Oncely 0.2 patched dist/index.js in place (marker v1); such a
// bundle is read as the output of the replacements `since: 1` and gets only the later ones.

const PACKAGE = 'local-aws-sqs';
const VERSION = '2.0.2';
/** The version of the patch: bump it when the replacements change, and give new ones this `since`. */
const PATCH_VERSION = 4;
const MARKER = `/* oncely-patch v${PATCH_VERSION} */`;
/** The first line of a bundle Oncely patched, in place (v1) or beside it. */
const ANY_MARKER = /^\/\* oncely-patch v(\d+) \*\/[^\n]*\n/;

/**
 * One fix: `find` must occur exactly once in the bundle as the replacements before it left it.
 * `since` is the patch version that introduced it: a later replacement may rewrite an earlier one's
 * output, and a bundle patched by version N already holds every replacement `since` N or before.
 */
export interface BundleReplacement {
  since: number;
  what: string;
  find: string;
  replace: string;
}

/** The installed local-aws-sqs is not the one the patch was written for, or cannot be rewritten. */
export class SqsEmulatorPatchError extends OncelyError {
  static override readonly errorName: string = 'SqsEmulatorPatchError';
  readonly retryable = false;
}

/** Oncely 0.2's receive loop (patch v1): what the v2 receive loop replaces in a bundle it patched. */
const RECEIVE_LOOP_V1 = `Fs = async function (waitSeconds, maxMessages, visibilityTimeout) {
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
}`;

// The replacements use the bundle's own minified identifiers. In the Queue class (Xt): S(obj, field)
// reads a private field, m(obj, field, value) defines one, C(obj, field, value) sets one,
// h(obj, name, value) defines a public one, ie(obj, field)._ is a private counter, l(obj, D, fn) gets
// a private method; E holds the queue's records, ge counts delayed ones, Me is the in-flight quota, X
// the sequence numbers' state, je moves a record to the DLQ, Wt marks a record in flight, ks issues a
// sequence number, Fs is the receive loop, jt reads a receipt handle and Gs makes one. Around it: T
// is an SQS error, u an InvalidParameterValue, F an OverLimit, Ge a BatchRequestTooLong; M tests for a
// plain object, Ce and H validate message attributes, Nt a parameter's type.
export const SQS_EMULATOR_REPLACEMENTS: readonly BundleReplacement[] = [
  {
    since: 1,
    what: 'the receive loop (Fs)',
    find: 'Fs=function(t,e,i){return p(this,null,function*(){let r=[],n,o,a=new Promise(y=>{o=y}),d=0,c;return n=setTimeout(()=>{clearInterval(c),o()},fr+t*1e3),n.unref(),c=setInterval(()=>{d++;for(let y of S(this,E))if(!y.delayed){if(y.visible){l(this,D,Wt).call(this,y,i);let f=ke({},y);f.record=ke({},f.record),f.record.attributes=ke({},f.record.attributes),r.push(f)}if(r.length==e){clearInterval(c),clearTimeout(n),o();break}}},10),c.unref(),yield a,r.map(y=>y.record)})}',
    replace: RECEIVE_LOOP_V1,
  },
  {
    since: 1,
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
    since: 1,
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
    since: 1,
    what: 'the dead-letter move (je)',
    find: 'typeof n.MessageDeduplicationId!="undefined"&&(a=n.MessageDeduplicationId);',
    replace: `// Like SQS, the FIFO DLQ copy's deduplication id is its MessageId, so that redriving it to the source
// queue within 5 minutes is not dropped as a duplicate of the original send.
typeof n.MessageDeduplicationId !== 'undefined' && (a = i);`,
  },
  {
    since: 2,
    what: 'the receive loop, v2 (Fs)',
    find: RECEIVE_LOOP_V1,
    replace: `Fs = async function (waitSeconds, maxMessages, visibilityTimeout) {
  // Like SQS long polling: scan at once, return as soon as a scan finds messages, else poll until the wait
  // elapses (a short poll, WaitTimeSeconds 0, is a single scan).
  const deadline = Date.now() + waitSeconds * 1e3;
  for (;;) {
    const records = S(this, E);
    const chosen = this.FifoQueue
      ? oncelyFifoBatch(records, maxMessages, S(this, Me), this.service.oncelyOneGroupPerReceive)
      : records.filter((entry) => entry.visible && !entry.delayed).slice(0, maxMessages);
    const taken = chosen.map((entry) => {
      l(this, D, Wt).call(this, entry, visibilityTimeout);
      // A snapshot, so later receives do not change what this response reports.
      return { ...entry.record, attributes: { ...entry.record.attributes } };
    });
    if (taken.length || Date.now() >= deadline) return taken;
    await new Promise((resolve) => setTimeout(resolve, 10).unref());
  }

  /**
   * What a FIFO receive returns, as SQS does (docs: FIFO-queues-understanding-logic.html): no message of a
   * group while one of it is in flight, a group only ever from its head, and "as many messages with the
   * same message group ID as possible": the run of the group whose head is oldest, then (unless
   * oneGroupPerReceive, a harsher setting) the next groups' runs. At the in-flight quota (120,000,
   * quotas-fifo.html) it returns nothing, and no error.
   */
  function oncelyFifoBatch(records, maxMessages, inFlightQuota, oneGroupPerReceive) {
    const closed = new Set();
    let inFlight = 0;
    for (const entry of records) {
      if (entry.visible) continue;
      inFlight++;
      closed.add(entry.record.attributes.MessageGroupId);
    }
    let room = Math.min(maxMessages, inFlightQuota - inFlight);
    const runs = new Map();
    for (const entry of records) {
      const group = entry.record.attributes.MessageGroupId;
      if (closed.has(group)) continue;
      if (entry.delayed) {
        closed.add(group);
        continue;
      }
      const run = runs.get(group);
      if (run) run.push(entry);
      else runs.set(group, [entry]);
      // The oldest group's run fills the batch: nothing further on can change it (a long backlog).
      if (runs.values().next().value.length >= room) break;
    }
    const batch = [];
    for (const run of runs.values()) {
      if (room <= 0) break;
      const part = run.slice(0, room);
      batch.push(...part);
      room -= part.length;
      if (oneGroupPerReceive) break;
    }
    return batch;
  }
}`,
  },
  {
    since: 2,
    what: 'the in-flight quota check of receive',
    find: 'o=i!=null?i:1,a=S(this,E).length,d=S(this,E).filter(f=>!f.visible).length,c=a-d;if(o+c>=S(this,Me))throw new F("The maximum number of in flight messages is reached");',
    replace: `o = i != null ? i : 1;
// SQS's quota counts in-flight messages, where the original counted visible ones (so that a backlog of
// 20,000 never drained). A standard queue refuses a receive at it with OverLimit (API_ReceiveMessage); a
// FIFO queue returns nothing (quotas-fifo.html), which its receive loop does.
if (!this.FifoQueue && S(this, E).filter((f) => !f.visible).length >= S(this, Me)) {
  throw new F('The maximum number of in flight messages is reached');
}
`,
  },
  {
    since: 2,
    what: 'the FIFO in-flight quota',
    // SQS FIFO queues now allow 120,000 messages in flight, as standard ones do (quotas-fifo.html).
    find: 'C(this,Me,2e4)',
    replace: 'C(this,Me,12e4)',
  },
  {
    since: 2,
    what: 'marking a record in flight (Wt)',
    find: 'Wt=function(t,e,i){if(!t)return;let r=this.VisibilityTimeout*1e3;typeof e=="number"&&!isNaN(e)&&(r=e*1e3);let n=Number(t.record.attributes.ApproximateReceiveCount)+1;t.record.attributes.ApproximateReceiveCount=String(n),n==1&&(t.record.attributes.ApproximateFirstReceiveTimestamp=Date.now().toString()),t.visible=!1,i||(t.record.ReceiptHandle=l(this,D,Gs).call(this,t.record.MessageId)),t.tm&&clearTimeout(t.tm),t.tm=setTimeout(()=>{t&&(this.RedrivePolicy&&Number(t.record.attributes.ApproximateReceiveCount)>=this.RedrivePolicy.maxReceiveCount?S(this,je).call(this,t):t.visible=!0)},r),t.tm.unref(),t.tmStart=Date.now()}',
    replace: `Wt = function (entry, visibilitySeconds, isVisibilityChange) {
  if (!entry) return;
  const timeoutMs =
    typeof visibilitySeconds === 'number' && !isNaN(visibilitySeconds)
      ? visibilitySeconds * 1e3
      : this.VisibilityTimeout * 1e3;
  // Only a receive counts as one, with a new receipt handle: the original also counted a
  // ChangeMessageVisibility, so a heartbeat sent a message to the DLQ after one delivery.
  if (!isVisibilityChange) {
    const attributes = entry.record.attributes;
    const count = Number(attributes.ApproximateReceiveCount) + 1;
    attributes.ApproximateReceiveCount = String(count);
    if (count === 1) attributes.ApproximateFirstReceiveTimestamp = Date.now().toString();
    entry.record.ReceiptHandle = l(this, D, Gs).call(this, entry.record.MessageId);
    entry.receivedAt = Date.now();
  }
  entry.visible = false;
  if (entry.tm) clearTimeout(entry.tm);
  const expire = () => {
    const exhausted =
      this.RedrivePolicy &&
      Number(entry.record.attributes.ApproximateReceiveCount) >= this.RedrivePolicy.maxReceiveCount;
    if (exhausted) S(this, je).call(this, entry);
    else entry.visible = true;
  };
  entry.tmStart = Date.now();
  // A change to 0 makes the message visible at once, as in SQS: through a timer, a request right
  // after it could still find the message in flight on a busy machine.
  if (isVisibilityChange && timeoutMs <= 0) {
    entry.tm = undefined;
    expire();
    return;
  }
  entry.tm = setTimeout(expire, timeoutMs);
  entry.tm.unref();
}`,
  },
  {
    since: 2,
    what: 'changeVisibility',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the bundle's own template literal, matched verbatim
    find: 'changeVisibility(t,e){let{MessageId:i}=l(this,D,jt).call(this,t),r=S(this,E).find(o=>o.record.MessageId==i);if(this.FifoQueue&&(!r||r.visible||t!=r.record.ReceiptHandle))throw new u(`Value ${t} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.`);if(!r)return!1;let n=Number(e);return l(this,D,Wt).call(this,r,n,!0),!0}',
    replace: `changeVisibility(t, e) {
  const { MessageId } = l(this, D, jt).call(this, t);
  const entry = S(this, E).find((o) => o.record.MessageId == MessageId);
  if (this.FifoQueue && (!entry || entry.visible || t != entry.record.ReceiptHandle)) {
    throw new u(\`Value \${t} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.\`);
  }
  if (!entry) return false;
  // SQS (API_ChangeMessageVisibility): a message not in flight is refused, where the original made it in
  // flight without a receive.
  if (entry.visible) {
    throw new T({
      Code: 'AWS.SimpleQueueService.MessageNotInflight',
      Type: 'com.amazonaws.sqs#MessageNotInflight',
      Message: "The specified message isn't in flight.",
      statusCode: 400,
    });
  }
  const seconds = Number(e);
  // SQS: a message's visibility timeout cannot be extended past 12 hours after it was received.
  if (Date.now() + seconds * 1e3 > entry.receivedAt + 43200 * 1e3) {
    throw new u(
      \`Value \${e} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]\`,
    );
  }
  l(this, D, Wt).call(this, entry, seconds, true);
  return true;
}`,
  },
  {
    since: 2,
    what: 'the sequence number (ks)',
    find: 'ks=function(t){S(this,X)[t]?S(this,X)[t].count+=1:S(this,X)[t]={seqId:hr(),count:1};let{seqId:e}=S(this,X)[t],i=String(S(this,X)[t].count);return i.padStart(lr+1-i.length,e).slice(0,20)}',
    replace: `ks = function () {
  // SQS: a 20-digit number that increases with each message of a group (API_SendMessage); one counter of
  // the queue's does. The original padded a per-group count with random digits, so it did not increase.
  const counter = S(this, X);
  counter.last = (counter.last ?? 10n ** 19n) + 1n;
  return String(counter.last);
}`,
  },
  {
    since: 2,
    what: 'the size of a SendMessage',
    find: 'let r=e.MessageBody.length;if(i){let o=Object.values(i);for(let d of o){Ce(d);let{StringValue:c,BinaryValue:y,DataType:f}=d;typeof f=="string"&&(r+=f.length),typeof c=="string"&&(r+=c.length),typeof y=="string"&&(r+=y.length)}H(i);let a=Object.keys(i);for(let d of a)r+=d.length}',
    replace: `if (i) {
  for (const d of Object.values(i)) Ce(d);
  H(i);
}
let r = oncelyMessageSize(e.MessageBody, i);`,
  },
  {
    since: 2,
    what: 'the size of a FIFO SendMessageBatch entry',
    find: 'let r=i.MessageBody.length,n=i.MessageAttributes;if(n){let a=Object.values(n);H(n);for(let c of a){let{StringValue:y,BinaryValue:f,DataType:g}=c;typeof g=="string"&&(r+=g.length),typeof y=="string"&&(r+=y.length),typeof f=="string"&&(r+=f.length)}let d=Object.keys(n);for(let c of d)r+=c.length}',
    replace: `let n = i.MessageAttributes;
if (n) H(n);
let r = oncelyMessageSize(i.MessageBody, n);`,
  },
  {
    since: 2,
    what: 'the size of a standard SendMessageBatch entry',
    find: 'let i=s.MessageBody.length,r=s.MessageAttributes;if(r)try{let a=Object.values(r);H(r);for(let c of a){let{StringValue:y,BinaryValue:f,DataType:g}=c;typeof g=="string"&&(i+=g.length),typeof y=="string"&&(i+=y.length),typeof f=="string"&&(i+=f.length)}let d=Object.keys(r);for(let c of d)i+=c.length}catch(a){return{Code:a.Code,Id:s.Id,Message:a.message,SenderFault:"true"}}',
    replace: `let r = s.MessageAttributes;
if (r) {
  try {
    H(r);
  } catch (a) {
    return { Code: a.Code, Id: s.Id, Message: a.message, SenderFault: 'true' };
  }
}
let i = oncelyMessageSize(s.MessageBody, r);`,
  },
  {
    since: 2,
    what: 'the size of a whole SendMessageBatch (Ai)',
    find: 'var Ai=s=>{let t=0;for(let e of s)if((typeof e.MessageBody=="number"||typeof e.MessageBody=="boolean")&&(e.MessageBody=String(e.MessageBody)),Nt(e.MessageBody,"string"),typeof e.MessageBody=="string"&&(t+=e.MessageBody.length),M(e.MessageAttributes))for(let i of Object.keys(e.MessageAttributes)){t+=i.length;let r=e.MessageAttributes[i];if(!M(r))continue;let{StringValue:n,BinaryValue:o,DataType:a}=r;typeof a=="string"&&(t+=a.length),typeof n=="string"&&(t+=n.length),typeof o=="string"&&(t+=o.length)}if(t>1048576)throw new Ge(t)};',
    replace: `/**
 * A message's size as SQS counts it against MaximumMessageSize (at most 1 MiB, 1,048,576 bytes): the
 * UTF-8 bytes of its body and of each attribute's name, type and value, a binary value's decoded bytes
 * (API_SendMessage, API_MessageAttributeValue). The original counted UTF-16 code units, so a multi-byte
 * body that SQS refuses went through.
 */
function oncelyMessageSize(body, attributes) {
  let size = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : 0;
  for (const [name, value] of Object.entries(attributes ?? {})) {
    size += Buffer.byteLength(name, 'utf8');
    if (!M(value)) continue;
    const { DataType, StringValue, BinaryValue } = value;
    if (typeof DataType === 'string') size += Buffer.byteLength(DataType, 'utf8');
    if (typeof StringValue === 'string') size += Buffer.byteLength(StringValue, 'utf8');
    if (typeof BinaryValue === 'string') size += Buffer.from(BinaryValue, 'base64').length;
  }
  return size;
}
// A batch's total counts the same bytes (1 MiB at most, API_SendMessageBatch).
var Ai = (s) => {
  let t = 0;
  for (const e of s) {
    if (typeof e.MessageBody == 'number' || typeof e.MessageBody == 'boolean') e.MessageBody = String(e.MessageBody);
    Nt(e.MessageBody, 'string');
    t += oncelyMessageSize(e.MessageBody, M(e.MessageAttributes) ? e.MessageAttributes : undefined);
  }
  if (t > 1048576) throw new Ge(t);
};`,
  },
  {
    since: 2,
    what: 'ApproximateNumberOfMessages',
    find: 'ApproximateNumberOfMessages:String(S(this,E).filter(o=>!o.delayed).length)',
    // SQS: the messages available for retrieval; those in flight are ApproximateNumberOfMessagesNotVisible
    // (API_GetQueueAttributes). The original counted both.
    replace: 'ApproximateNumberOfMessages: String(S(this, E).filter((o) => o.visible && !o.delayed).length)',
  },
  {
    since: 2,
    what: "a message move task's count of messages to move",
    // What it moves are the visible messages, which ApproximateNumberOfMessages now counts alone.
    find: 'this.ApproximateNumberOfMessagesToMove=Number(n)-Number(o)',
    replace: 'this.ApproximateNumberOfMessagesToMove = Number(n)',
  },
  {
    since: 2,
    what: "ReceiveMessage's system attribute names",
    find: 'let{VisibilityTimeout:e,WaitTimeSeconds:i,MaxNumberOfMessages:r,AttributeNames:n,MessageAttributeNames:o}=this.body,',
    // SQS takes the system attributes to return in MessageSystemAttributeNames, AttributeNames being its
    // deprecated name (API_ReceiveMessage); the original read only AttributeNames.
    replace: `let { VisibilityTimeout: e, WaitTimeSeconds: i, MaxNumberOfMessages: r, MessageAttributeNames: o } = this.body;
const legacyNames = this.body.AttributeNames;
const systemNames = this.body.MessageSystemAttributeNames;
let n = Array.isArray(legacyNames) || Array.isArray(systemNames)
  ? [...(Array.isArray(legacyNames) ? legacyNames : []), ...(Array.isArray(systemNames) ? systemNames : [])]
  : legacyNames;
let `,
  },
  {
    since: 3,
    what: 'delete',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the bundle's own template literal, matched verbatim
    find: 'delete(t){let{MessageId:e}=l(this,D,jt).call(this,t),i=S(this,E).findIndex(r=>r.record.MessageId==e);if(this.FifoQueue){let r=S(this,E)[i];if(!r)return!0;if(r.visible||t!=r.record.ReceiptHandle)throw new u(`Value ${t} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.`);l(this,D,zt).call(this,i)}else i!=-1&&l(this,D,zt).call(this,i);return!0}',
    replace: `delete(t) {
  const { MessageId } = l(this, D, jt).call(this, t);
  const index = S(this, E).findIndex((r) => r.record.MessageId == MessageId);
  const entry = S(this, E)[index];
  if (this.FifoQueue) {
    if (!entry) return true;
    if (entry.visible || t != entry.record.ReceiptHandle) {
      throw new u(\`Value \${t} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.\`);
    }
    l(this, D, zt).call(this, index);
    return true;
  }
  // SQS (API_DeleteMessage): a message received more than once is deleted with the handle of its latest
  // receive; with an earlier one "the request succeeds, but the message might not be deleted". The
  // harsher side: it is not. The original deleted it by its MessageId, whatever the handle.
  if (entry && t == entry.record.ReceiptHandle) l(this, D, zt).call(this, index);
  return true;
}`,
  },
  {
    since: 3,
    what: 'changeVisibility, v3: a stale receipt handle, and receiving again',
    find: `changeVisibility(t, e) {
  const { MessageId } = l(this, D, jt).call(this, t);
  const entry = S(this, E).find((o) => o.record.MessageId == MessageId);`,
    replace: `/**
 * Oncely's sandbox (its duplicate deliveries): the message of this receipt handle received once more,
 * as another consumer's receive may get it on SQS, with a receipt handle of its own that replaces the
 * earlier ones. A message deleted meanwhile still gets one, as a late duplicate on SQS does: a delete
 * with it changes nothing, a visibility change with it is refused. ApproximateReceiveCount is absent
 * then: the message is gone.
 */
oncelyReceiveAgain(receiptHandle) {
  const { MessageId } = l(this, D, jt).call(this, receiptHandle);
  const entry = S(this, E).find((o) => o.record.MessageId == MessageId);
  if (!entry) return { ReceiptHandle: l(this, D, Gs).call(this, MessageId) };
  l(this, D, Wt).call(this, entry);
  return {
    ReceiptHandle: entry.record.ReceiptHandle,
    ApproximateReceiveCount: entry.record.attributes.ApproximateReceiveCount,
  };
}
changeVisibility(t, e) {
  const { MessageId } = l(this, D, jt).call(this, t);
  const entry = S(this, E).find((o) => o.record.MessageId == MessageId);
  // SQS: a message received again is changed with its latest receipt handle only; an earlier one is
  // refused (ReceiptHandleIsInvalid, as for a message that is gone). The original took any.
  if (!this.FifoQueue && entry && t != entry.record.ReceiptHandle) return false;`,
  },
  {
    since: 4,
    what: "the oldest message's sent time, for the sandbox's ApproximateAgeOfOldestMessage",
    find: 'oncelyReceiveAgain(receiptHandle) {',
    replace: `/**
 * Oncely's sandbox (its CloudWatch figures): the SentTimestamp of the oldest message the queue holds,
 * visible, in flight or delayed, as SQS's ApproximateAgeOfOldestMessage counts them; undefined when empty.
 */
oncelyOldestSentAt() {
  let oldest;
  for (const entry of S(this, E)) {
    const sent = Number(entry.record.attributes.SentTimestamp);
    if (oldest === undefined || sent < oldest) oldest = sent;
  }
  return oldest;
}
oncelyReceiveAgain(receiptHandle) {`,
  },
];

/** Where local-aws-sqs is installed: the directory of its package.json. */
export function sqsEmulatorPackageDirectory(): string {
  return dirname(createRequire(import.meta.url).resolve(`${PACKAGE}/package.json`));
}

/**
 * Writes the patched bundle beside the installed local-aws-sqs unless it is already there, and returns
 * its path, to be loaded with `require`.
 */
export function ensureSqsEmulatorPatched(packageDirectory = sqsEmulatorPackageDirectory()): string {
  const patchedPath = join(packageDirectory, 'dist', `index.oncely-v${PATCH_VERSION}.js`);
  const { version } = JSON.parse(readFileSync(join(packageDirectory, 'package.json'), 'utf8')) as {
    version?: string;
  };
  if (version !== VERSION) {
    throw new SqsEmulatorPatchError(
      `Oncely's SQS emulator patch matches ${PACKAGE}@${VERSION} exactly, but ${packageDirectory} holds ${version}. ` +
        `Install ${PACKAGE}@${VERSION} (the version oncely depends on).`,
    );
  }
  const patched = patchSqsEmulatorBundle(readFileSync(join(packageDirectory, 'dist', 'index.js'), 'utf8'));
  // Compared whole rather than by its marker: a copy left by an unreleased patch of the same version is replaced.
  if (existsSync(patchedPath) && readFileSync(patchedPath, 'utf8') === patched) return patchedPath;
  // A new file renamed into place, never a rewrite of one: a package manager's store may hard-link the
  // package into other projects, and a sandbox starting at the same moment reads either no file or all of it.
  const temporary = `${patchedPath}.${process.pid}-${randomUUID()}.tmp`;
  try {
    writeFileSync(temporary, patched);
    renameSync(temporary, patchedPath);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw new SqsEmulatorPatchError(
      `Could not write the patched SQS emulator to ${patchedPath}. Run \`oncely local\` once as a user who may ` +
        'write to that node_modules directory.',
      { cause: error },
    );
  }
  return patchedPath;
}

/**
 * The bundle with every fix applied, and the marker first. `source` is the installed dist/index.js:
 * as published, or as an earlier Oncely patched it in place.
 */
export function patchSqsEmulatorBundle(source: string): string {
  const earlier = ANY_MARKER.exec(source);
  const patchedSince = earlier ? Number(earlier[1]) : 0;
  let patched = earlier ? source.slice(earlier[0].length) : source;
  for (const { since, what, find, replace } of SQS_EMULATOR_REPLACEMENTS) {
    if (since <= patchedSince) continue;
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
