/**
 * The dashboard's page: plain HTML, CSS and JavaScript, no build step and nothing loaded from
 * elsewhere. Kept in TypeScript strings rather than files beside the code so that they ship inside the
 * compiled library with no asset copying, in CommonJS and ES module applications alike. The script and
 * the styles are served as files of their own, so the page's Content-Security-Policy can refuse every
 * inline script. Every value from the queues (group names, task ids, errors, message previews) reaches
 * the page through `textContent` or an SVG attribute set with `setAttribute`, never as markup.
 */

/**
 * The page; `base` is where it is served, HTML-escaped by the caller. `first` is the overview rendered
 * when the page was asked for (absent when Redis could not be read), shown until the script's first poll.
 */
export const dashboardPage = (base: string, first?: { html: string; time: number }): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Queues</title>
<link rel="stylesheet" href="${base}/dashboard.css">
</head>
<body>
<header><h1>Queues</h1><span id="processes"></span><span id="status">${first ? `as of ${new Date(first.time).toISOString()}` : 'connecting…'}</span></header>
<main id="queues">${first?.html ?? ''}</main>
<script src="${base}/dashboard.js"></script>
</body>
</html>
`;

export const DASHBOARD_CSS = `:root { --fg: #1d2433; --muted: #6b7385; --line: #e3e6ee; --bg: #f6f7fb; --a: #2f6fdf; --b: #18a058; --c: #d9822b; --bad: #c0392b; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: baseline; gap: 16px; padding: 14px 24px; background: #fff; border-bottom: 1px solid var(--line); }
header h1 { font-size: 18px; margin: 0; }
#status { color: var(--muted); }
main { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 16px; padding: 16px 24px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; }
h2 { font-size: 15px; margin: 0 0 8px; } h2 small { color: var(--muted); font-weight: normal; margin-left: 6px; }
h2 small.mode { font-size: 12px; border: 1px solid var(--line); border-radius: 4px; padding: 0 6px; }
h3 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 14px 0 6px; }
.figures { display: grid; grid-template-columns: repeat(4, 1fr); gap: 8px; }
.figure b { display: block; font-size: 18px; font-variant-numeric: tabular-nums; }
.figure span { color: var(--muted); font-size: 12px; }
svg.chart { width: 100%; height: 90px; background: #fbfcfe; border: 1px solid var(--line); border-radius: 4px; }
svg.timeline { height: 46px; }
.legend { font-size: 12px; color: var(--muted); } .legend i { display: inline-block; width: 10px; height: 3px; margin: 0 4px 2px 10px; }
table { width: 100%; border-collapse: collapse; font-size: 13px; }
td, th { text-align: left; padding: 3px 6px; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
th { color: var(--muted); font-weight: normal; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } td.tight { white-space: nowrap; width: 1%; }
.empty { color: var(--muted); font-style: italic; }
tbody.dead-batch tr:first-child td { border-bottom: none; }
tbody.dead-batch tr:first-child td:first-child { min-width: 18ch; }
td.preview { padding-top: 0; color: var(--muted); }
td.preview code { display: block; font: 12px/1.35 ui-monospace, "SFMono-Regular", Menlo, monospace; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 0; min-width: 100%; }
button { font: inherit; font-size: 12px; padding: 2px 10px; border: 1px solid var(--a); color: var(--a); background: #fff; border-radius: 4px; cursor: pointer; }
button:disabled { opacity: .5; cursor: default; }
.error { color: var(--bad); }
h2 small.paused { color: #fff; background: var(--c); border-radius: 4px; padding: 0 6px; font-size: 12px; }
h3.warning, p.warning { color: var(--c); }
h2 button { float: right; }
tr[data-group] { cursor: pointer; } tr[data-group]:hover td { background: #f0f4fc; }
.pager { display: flex; gap: 8px; margin-top: 6px; }
`;

export const DASHBOARD_JS = `(() => {
  'use strict';
  const BASE = location.pathname.replace(/\\/+$/, '');
  const HISTORY = 60;
  const history = new Map();
  const SVG = 'http://www.w3.org/2000/svg';
  const fmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });
  // Pages of dead letters past the newest (by queue), and the group whose head is open: kept across refreshes.
  const deadPages = new Map();
  let openGroup = null;

  function el(tag, attrs, ...children) {
    const node = tag.startsWith('svg:') ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
    // Styles through the CSSOM: the Content-Security-Policy refuses style attributes.
    for (const [key, value] of Object.entries(attrs || {})) key === 'style' ? (node.style.cssText = value) : node.setAttribute(key, String(value));
    for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return node;
  }
  const ago = (ms) => (ms < 0 ? 'in ' : '') + duration(Math.abs(ms)) + (ms >= 0 ? ' ago' : '');
  function duration(ms) {
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 60000) return fmt.format(ms / 1000) + ' s';
    if (ms < 3600000) return fmt.format(ms / 60000) + ' min';
    return fmt.format(ms / 3600000) + ' h';
  }
  function figure(label, value, id) {
    return el('div', { class: 'figure' }, el('b', { 'data-figure': id }, value), el('span', {}, label));
  }
  function rates(name, stats, time, counters) {
    let points = history.get(name);
    if (!points) history.set(name, (points = []));
    points.push({ time, stats });
    if (points.length > HISTORY + 1) points.shift();
    const series = counters.map(() => []);
    for (let i = 1; i < points.length; i++) {
      const seconds = Math.max(0.001, (points[i].time - points[i - 1].time) / 1000);
      counters.forEach((counter, c) => series[c].push(Math.max(0, (points[i].stats[counter] - points[i - 1].stats[counter]) / seconds)));
    }
    return series;
  }
  function chart(lines) {
    const width = 500, height = 90;
    const max = Math.max(1, ...lines.flatMap((line) => line.values));
    const svg = el('svg:svg', { class: 'chart', viewBox: '0 0 ' + width + ' ' + height, preserveAspectRatio: 'none' });
    for (const line of lines) {
      const points = line.values.map((v, i) => (width * (i + HISTORY - line.values.length)) / HISTORY + ',' + (height - 4 - ((height - 8) * v) / max));
      if (points.length > 1) svg.append(el('svg:polyline', { points: points.join(' '), fill: 'none', stroke: line.color, 'stroke-width': 2, 'vector-effect': 'non-scaling-stroke' }));
    }
    svg.append(el('svg:text', { x: 4, y: 12, 'font-size': 10, fill: '#6b7385' }, 'max ' + fmt.format(max)));
    const legend = el('div', { class: 'legend' }, ...lines.flatMap((line) => [el('i', { style: 'background:' + line.color }), line.label]));
    return el('div', {}, svg, legend);
  }
  function table(headers, rows, empty) {
    if (rows.length === 0) return el('p', { class: 'empty' }, empty);
    return el('table', {}, el('tr', {}, ...headers.map((h) => el('th', {}, h))), ...rows);
  }
  function requeueButton(kind, queue, id) {
    const button = el('button', { type: 'button' }, 're-queue');
    button.addEventListener('click', () => requeue(kind, queue, id, button));
    return button;
  }
  /** What a request the server refused rejects with: its status, as the page shows it. */
  function refused(response) {
    return new Error(response.status + ' ' + response.statusText);
  }

  function post(path) {
    return fetch(BASE + '/api/' + path, { method: 'POST', headers: { 'x-requested-with': 'nrq-dashboard' } }).then((response) => {
      if (!response.ok) throw refused(response);
      return response.json();
    });
  }
  const queuePath = (kind, name) => kind + '/' + encodeURIComponent(name);
  function title(kind, queue, label, extra) {
    const action = queue.paused ? 'resume' : 'pause';
    const button = el('button', { type: 'button', 'data-action': action }, action);
    button.addEventListener('click', async () => {
      button.disabled = true;
      try {
        await post(queuePath(kind, queue.name) + '/' + action);
        setStatus((queue.paused ? 'resumed ' : 'paused ') + queue.name);
        await refresh();
      } catch (error) {
        button.disabled = false;
        setStatus('could not ' + action + ' ' + queue.name + ': ' + error.message, true);
      }
    });
    return el('h2', {}, queue.name, el('small', {}, label), ...extra, ...(queue.paused ? [el('small', { class: 'paused' }, 'paused')] : []), button);
  }
  // The newest dead letters come with the overview; older pages are asked for and kept until "newest".
  function deadList(kind, queue, render, headers, empty) {
    const key = kind + ':' + queue.name;
    const paged = deadPages.get(key);
    const items = paged ? paged.items : queue.dead;
    const cursor = paged ? paged.cursor : queue.deadCursor;
    const controls = [];
    if (paged) {
      const newest = el('button', { type: 'button' }, 'newest');
      newest.addEventListener('click', () => { deadPages.delete(key); refresh(); });
      controls.push(newest);
    }
    if (cursor) {
      const older = el('button', { type: 'button', 'data-action': 'older' }, 'older');
      older.addEventListener('click', async () => {
        older.disabled = true;
        try {
          const response = await fetch(BASE + '/api/' + queuePath(kind, queue.name) + '/dead?cursor=' + encodeURIComponent(cursor));
          if (!response.ok) throw refused(response);
          const page = await response.json();
          deadPages.set(key, { items: page.dead, cursor: page.deadCursor });
          await refresh();
        } catch (error) {
          older.disabled = false;
          setStatus('could not read older dead letters: ' + error.message, true);
        }
      });
      controls.push(older);
    }
    return el('div', {}, table(headers, items.map(render), empty), ...(controls.length ? [el('div', { class: 'pager' }, ...controls)] : []));
  }
  async function showGroup(queue, group) {
    try {
      const response = await fetch(BASE + '/api/fixed/' + encodeURIComponent(queue) + '/groups/' + encodeURIComponent(group) + '/head');
      if (!response.ok) throw refused(response);
      openGroup = { queue, group, ...(await response.json()) };
      await refresh();
    } catch (error) {
      setStatus('could not read group ' + group + ': ' + error.message, true);
    }
  }
  function groupHead(queue) {
    if (!openGroup || openGroup.queue !== queue.name) return [];
    const close = el('button', { type: 'button' }, 'close');
    close.addEventListener('click', () => { openGroup = null; refresh(); });
    return [el('h3', {}, 'head of ' + openGroup.group), el('div', { class: 'group-head', 'data-head': openGroup.group },
      table(['pushed', 'message'], openGroup.messages.map((m) => el('tr', {}, el('td', { class: 'tight' }, ago(openGroup.time - m.pushedAt)), el('td', { class: 'preview' }, el('code', {}, m.preview)))), 'the group holds no message'),
      el('div', { class: 'pager' }, close))];
  }

  // The error's first line; the whole text (a stack, often) on hover.
  const errorCell = (text) => el('td', { title: text || '' }, (text || '').split('\\n')[0]);

  function deadBatch(queue, batch, time) {
    const more = batch.size - batch.preview.length;
    const preview = batch.preview.map((json) => el('code', {}, json));
    if (more > 0) preview.push(el('code', {}, '… ' + fmt.format(more) + ' more'));
    return el('tbody', { class: 'dead-batch', 'data-dead-id': batch.id },
      el('tr', {}, el('td', {}, batch.group), el('td', { class: 'num tight' }, fmt.format(batch.size)), el('td', { class: 'num tight' }, batch.attempts),
        errorCell(batch.lastError), el('td', { class: 'tight' }, ago(time - batch.diedAt)), el('td', { class: 'tight' }, requeueButton('fixed', queue.name, batch.id))),
      el('tr', {}, el('td', { class: 'preview', colspan: 6 }, ...preview)));
  }

  function fixedCard(queue, time) {
    const s = queue.stats;
    const [pushed, delivered] = rates(queue.name, s, time, ['pushed', 'delivered']);
    const backlog = (history.get(queue.name) || []).slice(1).map((p) => p.stats.pending);
    const rate = queue.groupRateLimit;
    const mode = (queue.ordered ? 'ordered' : 'unordered') + ' · ' + queue.delivery +
      (rate ? ' · ' + rate.max + ' batches / ' + duration(rate.durationMs) + ' per group' : '');
    return el('section', { 'data-queue': queue.name },
      title('fixed', queue, 'FixedQueue', [el('small', { class: 'mode' }, mode)]),
      ...recordLines(queue, time),
      el('div', { class: 'figures' },
        figure('pending messages', fmt.format(s.pending), 'pending'), figure('groups', fmt.format(s.groups), 'groups'),
        figure('messages pushed', fmt.format(s.pushed), 'pushed'), figure('messages delivered', fmt.format(s.delivered), 'delivered'),
        figure('messages pushed / s', fmt.format(pushed.at(-1) || 0), 'pushed-rate'), figure('messages delivered / s', fmt.format(delivered.at(-1) || 0), 'delivered-rate'),
        figure('messages dropped', fmt.format(s.dropped), 'dropped'), figure('messages expired', fmt.format(s.expired), 'expired'),
        figure('groups running', fmt.format(s.active), 'active'), figure('groups paused', fmt.format(s.pausedGroups), 'paused-groups'),
        figure('messages redelivered', fmt.format(s.redelivered), 'redelivered'),
        figure('messages in dead batches', fmt.format(s.dead), 'dead'), figure('lag', duration(s.lagMs), 'lag')),
      el('h3', {}, 'throughput (messages / s)'),
      chart([{ label: 'pushed', color: 'var(--a)', values: pushed }, { label: 'delivered', color: 'var(--b)', values: delivered }]),
      el('h3', {}, 'backlog (messages)'), chart([{ label: 'pending', color: 'var(--c)', values: backlog }]),
      el('h3', {}, 'hottest groups'),
      table(['group', 'messages', 'due'], queue.hottest.map((g) => {
        const row = el('tr', { 'data-group': g.group, title: 'show its oldest messages' }, el('td', {}, g.group), el('td', { class: 'num tight' }, fmt.format(g.size)), el('td', { class: 'tight' }, ago(time - g.dueAt)));
        row.addEventListener('click', () => showGroup(queue.name, g.group));
        return row;
      }), 'no group holds messages'),
      ...groupHead(queue),
      ...pausedTable(queue, time),
      ...overdueTable(queue),
      // At-most-once, a batch leaves Redis as it is claimed: there is never a dead one to show.
      ...(queue.delivery === 'at-least-once'
        ? [el('h3', {}, 'dead batches (a row per batch, with its count of messages)'), deadList('fixed', queue, (b) => deadBatch(queue, b, time), ['group', 'messages', 'attempts', 'last error', 'died', ''], 'no dead batch')]
        : []));
  }

  // A data loss not dealt with yet, with its acknowledge button, and the last pass of the queue's task
  // source: shown only when there are.
  function recordLines(queue, time) {
    const lines = [];
    if (queue.dataLostAt !== undefined) {
      const button = el('button', { type: 'button', 'data-action': 'acknowledge-data-loss' }, 'acknowledge');
      button.addEventListener('click', async () => {
        button.disabled = true;
        try {
          await post(queuePath(queue.kind, queue.name) + '/acknowledge-data-loss');
          setStatus('acknowledged the data loss of ' + queue.name);
          await refresh();
        } catch (error) {
          button.disabled = false;
          setStatus('could not acknowledge the data loss of ' + queue.name + ': ' + error.message, true);
        }
      });
      const until = queue.kind === 'fixed' ? 'its messages are gone; shown until acknowledged' : 'shown until its task source runs or it is acknowledged';
      lines.push(el('p', { class: 'warning', 'data-data-lost': '' }, 'data lost ' + ago(time - queue.dataLostAt) + ': ' + until + ' ', button));
    }
    const pass = queue.lastReconcile;
    if (pass !== undefined)
      lines.push(el('p', { 'data-last-reconcile': '' }, 'last reconcile (' + pass.trigger + ') ' + ago(time - pass.at) + ': listed ' + fmt.format(pass.listed) +
        ', restored ' + fmt.format(pass.restored) + ', kept ' + fmt.format(pass.kept) + ', swept ' + fmt.format(pass.swept) + ', invalid ' + fmt.format(pass.invalid) + ', ' + duration(pass.durationMs)));
    return lines;
  }

  // Paused groups, each with its resume button: shown only while there are any.
  function pausedTable(queue, time) {
    if (queue.pausedGroups.length === 0) return [];
    const row = (g) => {
      const button = el('button', { type: 'button', 'data-action': 'resume-group' }, 'resume');
      button.addEventListener('click', async () => {
        button.disabled = true;
        try {
          await post('fixed/' + encodeURIComponent(queue.name) + '/groups/' + encodeURIComponent(g.group) + '/resume');
          setStatus('resumed group ' + g.group);
          await refresh();
        } catch (error) {
          button.disabled = false;
          setStatus('could not resume group ' + g.group + ': ' + error.message, true);
        }
      });
      return el('tr', { 'data-paused-group': g.group }, el('td', {}, g.group), el('td', { class: 'tight' }, g.reason),
        el('td', { class: 'tight' }, ago(time - g.pausedAt)), el('td', { class: 'tight' }, button));
    };
    return [el('h3', { class: 'warning' }, 'paused groups (nothing of them is delivered until resumed)'),
      table(['group', 'reason', 'paused', ''], queue.pausedGroups.map(row), '')];
  }

  // Handlers here past their deadline, each holding its group or task: shown only while there are any.
  function overdueTable(queue) {
    if (queue.overdue.length === 0) return [];
    return [el('h3', { class: 'warning' }, 'handlers past their timeout, still holding their work (this process)'),
      table([queue.kind === 'fixed' ? 'group' : 'task', 'consumer', 'running for', 'past its timeout'], queue.overdue.map((h) =>
        el('tr', { 'data-overdue': '' }, el('td', {}, h.group !== undefined ? h.group : h.id), el('td', {}, h.consumer),
          el('td', { class: 'tight' }, duration(h.runningMs)), el('td', { class: 'tight' }, duration(h.overdueMs)))), '')];
  }

  function timeline(tasks, time) {
    const width = 500, height = 46;
    const svg = el('svg:svg', { class: 'chart timeline', viewBox: '0 0 ' + width + ' ' + height });
    if (tasks.length === 0) return svg;
    const span = Math.max(1000, tasks[tasks.length - 1].runAt - time);
    for (const task of tasks) {
      const x = 6 + ((width - 12) * Math.max(0, task.runAt - time)) / span;
      svg.append(el('svg:circle', { cx: x, cy: 20, r: 4, fill: 'var(--a)', 'fill-opacity': 0.6 }, el('svg:title', {}, task.id + ' · ' + ago(time - task.runAt))));
    }
    svg.append(el('svg:text', { x: 4, y: 42, 'font-size': 10, fill: '#6b7385' }, 'now'));
    svg.append(el('svg:text', { x: width - 4, y: 42, 'font-size': 10, fill: '#6b7385', 'text-anchor': 'end' }, '+' + duration(span)));
    return svg;
  }

  function delayCard(queue, time) {
    const s = queue.stats;
    const [fired, completed] = rates(queue.name, s, time, ['fired', 'completed']);
    const backlog = (history.get(queue.name) || []).slice(1).map((p) => p.stats.scheduled);
    return el('section', { 'data-queue': queue.name },
      title('delay', queue, 'DelayQueue', []),
      ...recordLines(queue, time),
      el('div', { class: 'figures' },
        figure('tasks scheduled', fmt.format(s.scheduled), 'scheduled'), figure('tasks running', fmt.format(s.active), 'active'),
        figure('tasks due, waiting', fmt.format(s.due), 'due'), figure('dead tasks', fmt.format(s.dead), 'dead'),
        figure('deliveries (fired)', fmt.format(s.fired), 'fired'), figure('tasks completed', fmt.format(s.completed), 'completed'),
        figure('deliveries / s', fmt.format(fired.at(-1) || 0), 'fired-rate'), figure('lag', duration(s.lagMs), 'lag')),
      el('h3', {}, 'throughput (deliveries and completed tasks / s)'),
      chart([{ label: 'fired', color: 'var(--a)', values: fired }, { label: 'completed', color: 'var(--b)', values: completed }]),
      el('h3', {}, 'backlog (scheduled tasks)'), chart([{ label: 'scheduled', color: 'var(--c)', values: backlog }]),
      el('h3', {}, 'upcoming'), timeline(queue.upcoming, time),
      table(['task', 'due'], queue.upcoming.slice(0, 5).map((t) => el('tr', {}, el('td', {}, t.id), el('td', {}, ago(time - t.runAt)))), 'nothing scheduled'),
      ...overdueTable(queue),
      el('h3', {}, 'dead tasks'),
      deadList('delay', queue, (t) =>
        el('tr', { 'data-dead-id': t.id }, el('td', {}, t.id), el('td', { class: 'num tight' }, t.attempts), errorCell(t.lastError),
          el('td', { class: 'tight' }, ago(time - t.diedAt)), el('td', { class: 'tight' }, requeueButton('delay', queue.name, t.id))), ['task', 'attempts', 'last error', 'died', ''], 'no dead task'));
  }

  function schedulesCard(schedules, time) {
    const when = (s) => (s.cron !== undefined ? 'cron ' + s.cron + (s.tz ? ' (' + s.tz + ')' : '') : 'every ' + s.everyMs + ' ms');
    // No run recorded is "never" unless Redis lost its data since: a run before that left no trace.
    const lastRun = (s) => s.lastRunAt !== undefined ? s.lastOutcome + ' ' + ago(time - s.lastRunAt)
      : s.lastRunLostAt === undefined ? 'never' : 'unknown: data lost ' + ago(time - s.lastRunLostAt);
    // Its queue is internal: folded into the row, with the pause button its card had.
    const queueCell = (s) => {
      const q = s.queue;
      if (!q) return el('td', { class: 'tight', 'data-schedule-queue': '' });
      const text = [...(q.paused ? ['paused'] : []), fmt.format(q.active) + ' running', 'lag ' + duration(q.lagMs),
        ...(q.overdue > 0 ? [fmt.format(q.overdue) + ' past timeout'] : [])].join(' · ');
      const action = q.paused ? 'resume' : 'pause';
      const button = el('button', { type: 'button', 'data-action': action }, action);
      button.addEventListener('click', async () => {
        button.disabled = true;
        try {
          await post(queuePath('delay', q.name) + '/' + action);
          setStatus((q.paused ? 'resumed ' : 'paused ') + s.name);
          await refresh();
        } catch (error) {
          button.disabled = false;
          setStatus('could not ' + action + ' ' + s.name + ': ' + error.message, true);
        }
      });
      return el('td', { class: 'tight', 'data-schedule-queue': '' }, text, ' ', button);
    };
    const row = (s) =>
      el('tr', { 'data-schedule': s.name }, el('td', {}, s.name),
        el('td', {}, when(s), s.competing ? el('small', { 'data-competing': '' }, ' also declared: ' + s.competing.join('; ')) : ''),
        el('td', { class: 'tight' }, ago(time - s.nextRunAt)),
        el('td', { class: 'tight' }, lastRun(s)),
        el('td', { class: 'tight' }, s.handled ? 'here' : 'no handler'), queueCell(s));
    return el('section', { 'data-schedules': '' },
      el('h2', {}, 'Recurring', el('small', {}, '@Recurring schedules')),
      table(['schedule', 'when', 'next run', 'last run', 'handler', 'its queue'], schedules.map(row), 'no schedule'));
  }

  async function requeue(kind, queue, id, button) {
    button.disabled = true;
    try {
      await post(queuePath(kind, queue) + '/requeue/' + encodeURIComponent(id));
      setStatus('re-queued ' + id);
      await refresh();
    } catch (error) {
      button.disabled = false;
      setStatus('could not re-queue ' + id + ': ' + error.message, true);
    }
  }

  function setStatus(text, bad) {
    const status = document.getElementById('status');
    status.textContent = text;
    status.className = bad ? 'error' : '';
  }

  async function refresh() {
    const response = await fetch(BASE + '/api', { headers: { accept: 'application/json' } });
    if (!response.ok) throw refused(response);
    const overview = await response.json();
    const cards = overview.queues.map((q) => (q.kind === 'fixed' ? fixedCard(q, overview.time) : delayCard(q, overview.time)));
    if (overview.schedules.length > 0) cards.unshift(schedulesCard(overview.schedules, overview.time));
    document.getElementById('queues').replaceChildren(...cards);
    const versions = Object.entries(overview.processes.versions).map(([version, count]) => version + ' ×' + count).join(', ');
    document.getElementById('processes').textContent = 'processes: ' + (versions || 'none seen yet') + ' · data contract ' + overview.processes.dataContract;
    if (!/^(re-queued|paused|resumed|acknowledged)/.test(document.getElementById('status').textContent)) setStatus('updated ' + new Date(overview.time).toLocaleTimeString());
  }

  async function loop() {
    try {
      await refresh();
    } catch (error) {
      setStatus('cannot reach the dashboard API: ' + error.message, true);
    }
    setTimeout(loop, 1000);
  }
  loop();
})();
`;
