// The console's page, script and style (docs/console.md), served by the package itself: no CDN,
// no build step, nothing inline (the server's Content-Security-Policy allows only these). The
// script writes every value it shows as text, never as markup.

export const CONSOLE_PAGE: string = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Oncely console</title>
<link rel="stylesheet" href="/console.css">
<script src="/console.js" defer></script>
</head>
<body>
<header><h1>Oncely console</h1><p id="target" aria-live="polite"></p></header>
<main>
<p id="action-status" role="status" aria-live="polite"></p>
<section aria-labelledby="overview-title">
  <h2 id="overview-title">Overview</h2>
  <p class="note">Read every 2 s. <span id="read-at"></span></p>
  <div class="scroll"><table id="queues"><caption>Queues</caption>
    <thead><tr><th scope="col">Queue</th><th scope="col">Visible</th><th scope="col">In flight</th><th scope="col">Delayed</th></tr></thead>
    <tbody></tbody></table></div>
  <dl id="counts"></dl>
  <div id="functions"></div>
</section>
<section aria-labelledby="messages-title">
  <h2 id="messages-title">Messages</h2>
  <p class="note">The latest first, from the sandbox's spans or a stack's consumer log lines; read every 2 s.</p>
  <form id="messages-form">
    <label for="filter-key">Key contains</label>
    <input id="filter-key" autocomplete="off" spellcheck="false">
    <label for="filter-type">Of type</label>
    <input id="filter-type" autocomplete="off" spellcheck="false">
    <label for="filter-group">In group</label>
    <input id="filter-group" autocomplete="off" spellcheck="false">
    <label for="filter-state">In state</label>
    <select id="filter-state">
      <option value="">any</option>
      <option>in progress</option><option>applied</option><option>duplicate</option><option>in-doubt</option><option>dead-lettered</option>
      <option>deferred</option><option>given-back</option><option>pending in the outbox</option>
    </select>
    <button type="submit">Filter</button>
  </form>
  <div id="messages" aria-live="polite"></div>
</section>
<section aria-labelledby="history-title">
  <h2 id="history-title">Follow a message</h2>
  <form id="history-form">
    <label for="key">Message key</label>
    <input id="key" name="key" required autocomplete="off" spellcheck="false">
    <label for="namespace">Namespace</label>
    <input id="namespace" name="namespace" required autocomplete="off" spellcheck="false" placeholder="the operation's, e.g. ledger">
    <button type="submit">Tell its story</button>
  </form>
  <div id="history" aria-live="polite"></div>
</section>
<section aria-labelledby="publish-title" id="publish" hidden>
  <h2 id="publish-title">Publish a message</h2>
  <p class="note">Through the pipeline's publisher, as a service would: a type your consumer handles.
    <span id="publish-types-note"></span></p>
  <datalist id="publish-types"></datalist>
  <form id="publish-form">
    <label for="publish-type">Type</label>
    <input id="publish-type" required autocomplete="off" spellcheck="false" list="publish-types" aria-describedby="publish-types-note">
    <label for="publish-group">Group</label>
    <input id="publish-group" required autocomplete="off" spellcheck="false">
    <label for="publish-key">Key (optional: derived from the message when empty)</label>
    <input id="publish-key" autocomplete="off" spellcheck="false">
    <label for="publish-payload">Payload (JSON)</label>
    <textarea id="publish-payload" required rows="4" spellcheck="false">{}</textarea>
    <button type="submit">Publish</button>
  </form>
</section>
<section aria-labelledby="outbox-title">
  <h2 id="outbox-title">Outbox</h2>
  <button type="button" id="outbox-load">List the pending messages</button>
  <div id="outbox" aria-live="polite"></div>
</section>
<section aria-labelledby="in-doubt-title">
  <h2 id="in-doubt-title">Records to resolve</h2>
  <button type="button" id="in-doubt-load">List them</button>
  <div id="in-doubt" aria-live="polite"></div>
</section>
<section aria-labelledby="dlq-title">
  <h2 id="dlq-title">Dead-letter queue</h2>
  <p class="note">Listing receives each message and makes it visible again: a look, not a take.</p>
  <button type="button" id="dlq-load">List the DLQ</button>
  <div id="dlq" aria-live="polite"></div>
</section>
</main>
</body>
</html>
`;

export const CONSOLE_STYLE: string = `
:root { color-scheme: light dark; --line: #8886; --accent: #1d6fd1; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 72rem; padding: 0 1rem 3rem; }
h1 { font-size: 1.4rem; margin: 1rem 0 0; }
h2 { font-size: 1.15rem; margin-top: 2rem; }
.note { color: #555; font-size: .9rem; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
code, .mono { font-family: ui-monospace, monospace; font-size: .85rem; overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
dt { font-weight: 600; }
form { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; }
label { display: block; font-size: .9rem; width: 100%; }
select { font: inherit; padding: .3rem; }
input, textarea { font: inherit; padding: .35rem .5rem; min-width: 12rem; flex: 1; box-sizing: border-box; }
textarea { width: 100%; font-family: ui-monospace, monospace; }
button { font: inherit; padding: .35rem .9rem; cursor: pointer; }
button:focus-visible, input:focus-visible, textarea:focus-visible, a:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.error { color: #b71c1c; }
@media (prefers-color-scheme: dark) { .note { color: #bbb; } .error { color: #ff8a80; } }
.next li { margin: .25rem 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: .8rem; margin: .25rem 0; }
figure { margin: 1rem 0; }
figcaption { font-weight: 600; }
.waterfall { list-style: none; padding: 0; margin: .25rem 0; }
.waterfall li { margin: .35rem 0; }
.waterfall .label { display: block; font-size: .85rem; overflow-wrap: anywhere; }
.waterfall .bar { display: block; height: .6rem; background: var(--accent); border-radius: 2px; }
@media (max-width: 40rem) { body { font-size: 14px; } form { display: block; } input { width: 100%; margin-bottom: .5rem; } }
`;

export const CONSOLE_SCRIPT: string = `'use strict';
const $ = (id) => document.getElementById(id);
// The token comes in the address's fragment, which no request carries: only this page knows it.
const token = new URLSearchParams(location.hash.slice(1)).get('token');
let canAct = false;

function element(tag, text, attributes) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
  return node;
}

function table(caption, headers, rows) {
  const wrap = element('div', undefined, { class: 'scroll' });
  const t = element('table');
  t.append(element('caption', caption));
  const head = element('tr');
  for (const header of headers) head.append(element('th', header, { scope: 'col' }));
  const thead = element('thead');
  thead.append(head);
  t.append(thead);
  const body = element('tbody');
  for (const row of rows) {
    const tr = element('tr');
    for (const cell of row) tr.append(cell instanceof Node ? cell : element('td', cell === undefined ? '-' : cell));
    body.append(tr);
  }
  t.append(body);
  wrap.append(t);
  return wrap;
}

async function read(path) {
  const response = await fetch(path, { headers: { accept: 'application/json' } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

/** An action: with the token, after the page asked. Its answer, or the error the command would give. */
async function act(path, body) {
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-oncely-token': token || '' },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error || response.statusText);
  return answer;
}

function say(text, failed) {
  const status = $('action-status');
  status.textContent = text;
  status.className = failed ? 'error' : '';
}

function actionButton(label, run) {
  const button = element('button', label, { type: 'button' });
  button.addEventListener('click', () => run().catch((error) => say(label + ': ' + error.message, true)));
  return button;
}

function actionCell(...buttons) {
  const cell = element('td');
  cell.append(...buttons);
  return cell;
}

async function redrive(key) {
  const preview = await act('/api/dlq/redrive', { key, dryRun: true });
  if (!confirm('Move ' + preview.moved + ' message(s) of key ' + key + ' back to the queue?')) return say('Not redriven: nothing changed.');
  const result = await act('/api/dlq/redrive', { key });
  say('Redriven: ' + result.moved + ' message(s) of key ' + key + ' back on the queue.');
  listDlq();
}

async function discard(messageId) {
  const reason = prompt('Why discard message ' + messageId + ' for good? The reason is kept with it.');
  if (!reason) return say('Not discarded: nothing changed.');
  if (!confirm('Delete message ' + messageId + ' from the DLQ for good?')) return say('Not discarded: nothing changed.');
  const result = await act('/api/dlq/discard', { messageIds: [messageId], reason });
  say('Discarded ' + result.discarded.length + ' message(s).');
  listDlq();
}

/** Offers the types the consumer said it handles (its first batch logs them), as the type field's suggestions. */
async function offerTypes() {
  let types;
  try {
    ({ types } = await read('/api/publish/types'));
  } catch (error) {
    $('publish-types-note').textContent = 'Could not read the types your consumer handles: ' + error.message;
    return;
  }
  $('publish-types').replaceChildren(...types.map((type) => element('option', undefined, { value: type })));
  $('publish-types-note').textContent = types.length
    ? 'Your consumer handles: ' + types.join(', ') + '.'
    : 'Which types it handles, it says once it first runs; another type is dead-lettered.';
}

async function publishMessage() {
  let payload;
  try {
    payload = JSON.parse($('publish-payload').value);
  } catch (error) {
    return say('Not published: the payload is not JSON (' + error.message + ').', true);
  }
  const message = { type: $('publish-type').value.trim(), groupId: $('publish-group').value.trim(), key: $('publish-key').value.trim(), payload };
  const result = await act('/api/publish', message);
  const [first] = result.results;
  say('Published ' + message.type + ': ' + first.status + ', key ' + first.key + (first.reason ? ' (' + first.reason + ')' : '') + '.', first.status !== 'sent');
}

async function resolve(id, as) {
  const record = await read('/api/in-doubt/record?id=' + encodeURIComponent(id));
  const shown = id + ': ' + record.status + ', ' + (record.attempts || 0) + ' attempts' + (record.error ? ', ' + record.error.name + ': ' + record.error.message : '');
  const meaning = as === 'completed' ? 'it happened: never run it' : 'it did not happen: run it again';
  if (!confirm(shown + '\\n\\nResolve it as ' + as + ' (' + meaning + ')?')) return say('Not resolved: nothing changed.');
  await act('/api/in-doubt/resolve', { id, as });
  say(id + ' resolved as ' + as + '.');
  listInDoubt();
}

function showError(container, error) {
  container.replaceChildren(element('p', error.message, { class: 'error', role: 'alert' }));
}

function functionsTable(functions) {
  // From CloudWatch: a stack's, or the sandbox's edge's, which answers it from what it measures.
  const number = (value) => element('td', value, { class: 'number' });
  return table('Functions, the last 15 minutes (CloudWatch)', ['Function', 'Invocations', 'Errors', 'Throttles'],
    functions.map((f) => [f.name, number(f.invocations), number(f.errors), number(f.throttles)]));
}

async function refreshOverview() {
  try {
    const overview = await read('/api/overview');
    canAct = overview.actions && Boolean(token);
    const publishShown = $('publish').hidden && canAct && overview.publish;
    $('publish').hidden = !(canAct && overview.publish);
    if (publishShown) offerTypes();
    $('target').textContent = 'Pipeline: ' + overview.target + (canAct ? '' : overview.actions ? ' (open the address with its token to act)' : ' (read-only)');
    $('read-at').textContent = 'Last read ' + overview.readAt + '.';
    const ages = overview.queues.some((q) => q.oldestAgeSeconds !== undefined);
    $('queues').tHead.rows[0].replaceChildren(...['Queue', 'Visible', 'In flight', 'Delayed', ...(ages ? ['Oldest (s)'] : [])].map((h) => element('th', h, { scope: 'col' })));
    const rows = overview.queues.map((q) => {
      const name = element('td');
      // Its name, the URL's last part; the whole URL on hover.
      name.append(element('span', q.role === 'dlq' ? 'DLQ ' : 'Queue '), element('span', q.url.split('/').pop(), { class: 'mono', title: q.url }));
      return [name, element('td', q.visible, { class: 'number' }), element('td', q.inFlight, { class: 'number' }), element('td', q.delayed, { class: 'number' }),
        ...(ages ? [element('td', q.oldestAgeSeconds === undefined ? '-' : q.oldestAgeSeconds, { class: 'number' })] : [])];
    });
    $('queues').tBodies[0].replaceChildren(...rows.map((cells) => { const tr = element('tr'); tr.append(...cells); return tr; }));
    const counts = [
      ['Records in doubt', overview.unresolved.inDoubt + (overview.unresolved.more ? '+' : '')],
      ['Retries pending', overview.unresolved.retryPending + (overview.unresolved.more ? '+' : '')],
    ];
    stuckAfterSeconds = overview.outbox ? overview.outbox.stuckAfterSeconds : undefined;
    $('outbox-title').parentElement.hidden = !overview.outbox;
    if (overview.outbox) {
      counts.push(['Outbox pending', overview.outbox.pending + (overview.outbox.more ? '+' : '')]);
      counts.push(['Outbox stuck (over ' + overview.outbox.stuckAfterSeconds + ' s)', overview.outbox.stuck]);
    }
    $('functions').replaceChildren(overview.functions && overview.functions.length
      ? functionsTable(overview.functions)
      : '');
    $('counts').replaceChildren(...counts.flatMap(([name, value]) => [element('dt', name), element('dd', value, { 'data-count': name })]));
  } catch (error) {
    $('read-at').textContent = 'Could not read it: ' + error.message;
  }
}

/** What each section shows, as read: a reading again that finds the same changes nothing on the page. */
const shown = {};

/** Whether \`answer\` should be shown in \`section\`: always when asked for, else only when it changed. */
function worthShowing(section, answer, again) {
  const text = JSON.stringify(answer);
  if (again && shown[section] === text) return false;
  shown[section] = text;
  return true;
}

/** The message whose story is shown, read again with the overview while the pipeline runs. */
let followed = null;

async function tellHistory(key, namespace, again) {
  const container = $('history');
  followed = { key, namespace };
  if (!again) container.replaceChildren(element('p', 'Reading…'));
  try {
    const story = await read('/api/history?key=' + encodeURIComponent(key) + '&namespace=' + encodeURIComponent(namespace));
    if (!worthShowing('history', story, again)) return;
    const rows = story.steps.map((step) => [
      step.at,
      step.source,
      step.recordId,
      step.attempt,
      step.lease,
      step.messageId || (step.traceId ? 'trace ' + step.traceId : undefined),
      whatCell(step),
    ]);
    const parts = [element('h3', 'The story of ' + story.key)];
    parts.push(rows.length ? table('Steps, in time order', ['Time', 'From', 'Record', 'Attempt', 'Lease', 'Message id', 'What'], rows) : element('p', 'Nothing found by its key.'));
    for (const source of story.unread || []) parts.push(element('p', 'Not read: ' + source + '.', { class: 'note' }));
    const spans = story.steps.filter((step) => step.source === 'span');
    if (spans.length) parts.push(waterfall(spans));
    const now = element('ul');
    for (const record of story.records) now.append(element('li', record.id + ': ' + (record.status || 'no record') + (record.attempts === undefined ? '' : ', ' + record.attempts + ' attempts') + (record.error ? ', last error ' + record.error.name + ': ' + record.error.message : '')));
    if (story.outbox) now.append(element('li', 'outbox: ' + story.outbox.status + ', written ' + story.outbox.writtenAt + (story.outbox.sentAt ? ', sent ' + story.outbox.sentAt : '')));
    parts.push(element('h4', 'Now'), now, element('h4', 'Next'));
    const next = element('ul', undefined, { class: 'next' });
    for (const step of story.next) next.append(element('li', step));
    parts.push(next);
    container.replaceChildren(...parts);
  } catch (error) {
    showError(container, error);
  }
}

/** What a step says; a logged error's stack folded beneath it, opened on demand. */
function whatCell(step) {
  const cell = element('td', [step.event, step.receiveCount === undefined ? '' : '(receive ' + step.receiveCount + ')', step.detail || ''].filter(Boolean).join(' '));
  if (step.error) {
    const details = element('details');
    details.append(element('summary', (step.error.name || 'Error') + ': ' + (step.error.message || '')), element('pre', step.error.stack || '', { class: 'mono' }));
    cell.append(details);
  }
  return cell;
}

/** The spans of a story on one time axis: each a bar from its start, as long as it lasted. */
function waterfall(spans) {
  const start = Math.min(...spans.map((s) => Date.parse(s.at)));
  const end = Math.max(...spans.map((s) => Date.parse(s.at) + (s.durationMs || 0)));
  const scale = 100 / Math.max(end - start, 1);
  const list = element('ol', undefined, { class: 'waterfall', 'aria-label': 'Spans on one time axis, ' + (end - start) + ' ms in all' });
  for (const s of spans) {
    const item = element('li');
    const bar = element('span', undefined, { class: 'bar' });
    // Set through the style object, which the page's policy allows, not as markup.
    bar.style.marginLeft = ((Date.parse(s.at) - start) * scale).toFixed(2) + '%';
    bar.style.width = Math.max((s.durationMs || 0) * scale, 0.5).toFixed(2) + '%';
    item.append(element('span', s.event.replace(/^span /, '') + (s.detail ? ' — ' + s.detail : '') + ' (' + (s.durationMs || 0) + ' ms)', { class: 'label' }), bar);
    list.append(item);
  }
  const figure = element('figure');
  figure.append(element('figcaption', 'Spans, on one time axis'), list);
  return figure;
}

function storyLink(id, label) {
  const at = id.indexOf('#');
  const button = element('button', label || id, { type: 'button', class: 'mono' });
  button.addEventListener('click', () => {
    $('namespace').value = id.slice(0, at);
    $('key').value = id.slice(at + 1);
    tellHistory(id.slice(at + 1), id.slice(0, at));
    $('history-title').scrollIntoView();
  });
  const cell = element('td');
  cell.append(button);
  return cell;
}

/** Reads \`path\` into the section \`id\`, as \`render\` shows it, or the error. */
async function load(id, path, render, again) {
  const container = $(id);
  if (!again) container.replaceChildren(element('p', 'Reading…'));
  try {
    const answer = await read(path);
    if (worthShowing(id, answer, again)) container.replaceChildren(render(answer));
  } catch (error) {
    showError(container, error);
  }
}

/** The message list's filter, as the form says it. */
function messageQuery() {
  const query = new URLSearchParams();
  for (const [name, id] of [['key', 'filter-key'], ['type', 'filter-type'], ['group', 'filter-group'], ['state', 'filter-state']]) {
    if ($(id).value.trim()) query.set(name, $(id).value.trim());
  }
  return '/api/messages?' + query;
}

const listMessages = (again) => load('messages', messageQuery(), (list) => {
  if (!list.source) return element('p', 'Nothing to list them from: the sandbox collects spans with OpenTelemetry’s SDK installed (docs/local.md, Traces); a stack’s list is read from CloudWatch Logs with @aws-sdk/client-cloudwatch-logs installed (docs/console.md).');
  if (!list.messages.length) return element('p', 'No message matches.');
  const from = list.source === 'logs' ? ' (the consumer’s log lines, the last 15 minutes)' : '';
  return table(list.messages.length + (list.truncated ? ' (the latest)' : '') + ' message(s), the latest first' + from,
    ['Last seen', 'Key (its story)', 'Type', 'Group', 'State', 'Deliveries'],
    list.messages.map((m) => [m.lastAt, m.recordId ? storyLink(m.recordId, m.key) : m.key, m.type, m.group, m.state, m.deliveries]));
}, again);

/** The outbox's stuck bound, from the overview: a pending message older than it is stuck. */
let stuckAfterSeconds;
/** Whether the outbox's pending messages are listed: then read again with the overview (one query). */
let outboxListed = false;

const listOutbox = (again) => { outboxListed = true; return load('outbox', '/api/outbox', (listing) => {
  if (!listing.messages.length) return element('p', 'Nothing is pending in the outbox.');
  const groups = new Set(listing.messages.map((m) => m.groupId)).size;
  const stuck = (m) => stuckAfterSeconds !== undefined && m.ageSeconds > stuckAfterSeconds;
  return table(listing.messages.length + (listing.truncated ? '+' : '') + ' pending, in ' + groups + ' group(s), oldest first',
    ['Written', 'Age (s)', 'Stuck', 'Group', 'Type', 'Key', 'Failed sends', 'Last error', 'Sender'],
    listing.messages.map((m) => [m.createdAt, m.ageSeconds, stuck(m) ? 'stuck' : '', m.groupId, m.type, m.key, m.attempts, m.lastError,
      m.claim ? m.claim.owner + (m.claim.expired ? ' (gone)' : ' until ' + m.claim.expiresAt) : undefined]));
}, again); };

/** Whether the records to resolve are listed: then read again with the overview (one query, no receive). */
let inDoubtListed = false;

const listInDoubt = (again) => { inDoubtListed = true; return load('in-doubt', '/api/in-doubt', (page) => page.records.length
  ? table('Records in doubt or pending a retry, oldest first', ['Record (its story)', 'Status', 'Since', 'Attempts', 'Reason', ...(canAct ? ['Resolve'] : [])],
      page.records.map((r) => [storyLink(r.id), r.status, r.since, r.attempts, r.reason ? r.reason.name + ': ' + r.reason.message : undefined,
        ...(canAct ? [actionCell(actionButton('Completed', () => resolve(r.id, 'completed')), actionButton('Retry', () => resolve(r.id, 'retry')))] : [])]))
  : element('p', 'No records are in doubt or pending a retry.'), again); };

const listDlq = () => load('dlq', '/api/dlq', (listing) => listing.messages.length
  ? table('Messages in the DLQ, in the order they were sent there', ['Sent', 'Group', 'Type', 'Key', 'Receives', 'Error', 'Body', ...(canAct ? ['Act'] : [])],
      listing.messages.map((m) => [m.sentAt, m.groupId, m.type, m.key, m.receiveCount, m.error ? m.error.name + ': ' + (m.error.message || '') : 'moved by SQS after maxReceiveCount deliveries', m.body,
        ...(canAct ? [actionCell(...(m.key ? [actionButton('Redrive', () => redrive(m.key))] : []), actionButton('Discard', () => discard(m.messageId)))] : [])]))
  : element('p', 'The DLQ is empty.'));

document.addEventListener('DOMContentLoaded', () => {
  $('history-form').addEventListener('submit', (event) => {
    event.preventDefault();
    tellHistory($('key').value.trim(), $('namespace').value.trim());
  });
  $('in-doubt-load').addEventListener('click', () => listInDoubt());
  $('outbox-load').addEventListener('click', () => listOutbox());
  $('messages-form').addEventListener('submit', (event) => {
    event.preventDefault();
    listMessages();
  });
  listMessages();
  $('publish-type').addEventListener('focus', () => offerTypes());
  $('publish-form').addEventListener('submit', (event) => {
    event.preventDefault();
    publishMessage().catch((error) => say('Not published: ' + error.message, true));
  });
  $('dlq-load').addEventListener('click', listDlq);
  refreshOverview();
  // The DLQ is not read again on its own: a listing receives its messages, which a redrive would miss.
  setInterval(() => {
    refreshOverview();
    if (followed) tellHistory(followed.key, followed.namespace, true);
    if (inDoubtListed) listInDoubt(true);
    if (outboxListed) listOutbox(true);
    listMessages(true);
  }, 2000);
});
`;
