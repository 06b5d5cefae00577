import type { DeadBatchSummary, DeadSummary, QueueOverview, ScheduleOverview } from './dashboard.service';

/**
 * The first overview, rendered into the page as it is served: a page read once (a screenshot, a
 * crawler, a browser with scripts off) shows the queues instead of "connecting…". The page's script
 * replaces it with live cards (charts, buttons) at its first poll, so this shows the same figures with
 * the same labels and `data-figure` names, and leaves out what needs the script. Every value is escaped.
 */
export function renderSnapshot(overview: {
  time: number;
  queues: QueueOverview[];
  schedules: ScheduleOverview[];
}): string {
  const cards = overview.queues.map((queue) =>
    queue.kind === 'fixed' ? fixedCard(queue, overview.time) : delayCard(queue, overview.time),
  );
  if (overview.schedules.length > 0) cards.unshift(schedulesCard(overview.schedules, overview.time));
  return cards.join('\n');
}

/** When a schedule ticks, as its row says it. */
const describeSchedule = (s: ScheduleOverview): string =>
  s.cron !== undefined ? `cron ${s.cron}${s.tz ? ` (${s.tz})` : ''}` : `every ${s.everyMs} ms`;

/** Its last run, or why none is known. */
function lastRun(s: ScheduleOverview, time: number): string {
  if (s.lastRunAt !== undefined) return `${s.lastOutcome} ${ago(time - s.lastRunAt)}`;
  return s.lastRunLostAt === undefined ? 'never' : `unknown: data lost ${ago(time - s.lastRunLostAt)}`;
}

/** Its queue, folded into its row: what a card would have said that matters for a schedule. */
function scheduleQueue(s: ScheduleOverview): string {
  const queue = s.queue;
  if (queue === undefined) return '';
  return [
    ...(queue.paused ? ['paused'] : []),
    `${number(queue.active)} running`,
    `lag ${duration(queue.lagMs)}`,
    ...(queue.overdue > 0 ? [`${number(queue.overdue)} past timeout`] : []),
  ].join(' · ');
}

function schedulesCard(schedules: ScheduleOverview[], time: number): string {
  const row = (s: ScheduleOverview) =>
    `<tr data-schedule="${escapeHtml(s.name)}">${cell(s.name)}` +
    `${cell(s.competing ? `${describeSchedule(s)} (also declared: ${s.competing.join('; ')})` : describeSchedule(s))}` +
    `${cell(ago(time - s.nextRunAt), ' class="tight"')}` +
    `${cell(lastRun(s, time), ' class="tight"')}` +
    `${cell(s.handled ? 'here' : 'no handler', ' class="tight"')}` +
    `${cell(scheduleQueue(s), ' class="tight" data-schedule-queue')}</tr>`;
  return [
    '<section data-schedules>',
    '<h2>Recurring<small>@Recurring schedules</small></h2>',
    table(['schedule', 'when', 'next run', 'last run', 'handler', 'its queue'], schedules.map(row), 'no schedule'),
    '</section>',
  ].join('');
}

export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

type FixedOverview = Extract<QueueOverview, { kind: 'fixed' }>;
type DelayOverview = Extract<QueueOverview, { kind: 'delay' }>;

const fmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });
const number = (value: number): string => fmt.format(value);
/** Rates need two polls: none is known yet. */
const NOT_YET = '–';

function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${fmt.format(ms / 1000)} s`;
  if (ms < 3_600_000) return `${fmt.format(ms / 60_000)} min`;
  return `${fmt.format(ms / 3_600_000)} h`;
}

const ago = (ms: number): string => (ms < 0 ? 'in ' : '') + duration(Math.abs(ms)) + (ms >= 0 ? ' ago' : '');

const figure = (label: string, value: string, id: string): string =>
  `<div class="figure"><b data-figure="${id}">${escapeHtml(value)}</b><span>${label}</span></div>`;

const cell = (text: string | number, attrs = ''): string => `<td${attrs}>${escapeHtml(String(text))}</td>`;
const firstLine = (text: string | undefined): string => (text ?? '').split('\n')[0];

function table(headers: string[], rows: string[], empty: string): string {
  if (rows.length === 0) return `<p class="empty">${empty}</p>`;
  return `<table><tr>${headers.map((h) => `<th>${h}</th>`).join('')}</tr>${rows.join('')}</table>`;
}

function title(queue: QueueOverview, label: string, mode?: string): string {
  return (
    `<h2>${escapeHtml(queue.name)}<small>${label}</small>` +
    (mode ? `<small class="mode">${mode}</small>` : '') +
    (queue.paused ? '<small class="paused">paused</small>' : '') +
    '</h2>'
  );
}

/** A data loss not dealt with yet, and the last pass of the queue's task source, shown only when there are. */
function recordLines(queue: QueueOverview, time: number): string[] {
  const lines: string[] = [];
  const until =
    queue.kind === 'fixed'
      ? 'its messages are gone; shown until acknowledged'
      : 'shown until its task source runs or it is acknowledged';
  // Its acknowledge button needs the script.
  if (queue.dataLostAt !== undefined)
    lines.push(`<p class="warning" data-data-lost>data lost ${ago(time - queue.dataLostAt)}: ${until}</p>`);
  const pass = queue.lastReconcile;
  if (pass !== undefined)
    lines.push(
      `<p data-last-reconcile>last reconcile (${escapeHtml(pass.trigger)}) ${ago(time - pass.at)}: listed ${number(pass.listed)}, ` +
        `restored ${number(pass.restored)}, kept ${number(pass.kept)}, swept ${number(pass.swept)}, invalid ${number(pass.invalid)}, ${duration(pass.durationMs)}</p>`,
    );
  return lines;
}

/** Paused groups, shown only while there are any (their resume buttons need the script). */
function pausedTable(queue: FixedOverview, time: number): string[] {
  if (queue.pausedGroups.length === 0) return [];
  const row = (g: FixedOverview['pausedGroups'][number]) =>
    `<tr data-paused-group="${escapeHtml(g.group)}">${cell(g.group)}${cell(g.reason, ' class="tight"')}${cell(ago(time - g.pausedAt), ' class="tight"')}</tr>`;
  return [
    '<h3 class="warning">paused groups (nothing of them is delivered until resumed)</h3>',
    table(['group', 'reason', 'paused'], queue.pausedGroups.map(row), ''),
  ];
}

/** Handlers here past their deadline, each holding its group or task: shown only while there are any. */
function overdueTable(queue: QueueOverview): string[] {
  if (queue.overdue.length === 0) return [];
  const row = (h: QueueOverview['overdue'][number]) =>
    `<tr data-overdue>${cell('group' in h ? h.group : h.id)}${cell(h.consumer)}${cell(duration(h.runningMs), ' class="tight"')}${cell(duration(h.overdueMs), ' class="tight"')}</tr>`;
  return [
    '<h3 class="warning">handlers past their timeout, still holding their work (this process)</h3>',
    table(
      [queue.kind === 'fixed' ? 'group' : 'task', 'consumer', 'running for', 'past its timeout'],
      queue.overdue.map(row),
      '',
    ),
  ];
}

/** How a FixedQueue delivers, as its card's title says it. */
function fixedMode(queue: FixedOverview): string {
  const rate = queue.groupRateLimit;
  const limit = rate ? ` · ${rate.max} batches / ${duration(rate.durationMs)} per group` : '';
  return `${queue.ordered ? 'ordered' : 'unordered'} · ${queue.delivery}${limit}`;
}

function fixedCard(queue: FixedOverview, time: number): string {
  const s = queue.stats;
  const hottest = queue.hottest.map(
    (g) =>
      `<tr data-group="${escapeHtml(g.group)}">${cell(g.group)}${cell(number(g.size), ' class="num tight"')}${cell(ago(time - g.dueAt), ' class="tight"')}</tr>`,
  );
  const dead = (b: DeadBatchSummary) =>
    `<tr data-dead-id="${escapeHtml(b.id)}">${cell(b.group)}${cell(number(b.size), ' class="num tight"')}${cell(b.attempts, ' class="num tight"')}${cell(firstLine(b.lastError))}${cell(ago(time - b.diedAt), ' class="tight"')}</tr>`;
  const figures = [
    figure('pending messages', number(s.pending), 'pending'),
    figure('groups', number(s.groups), 'groups'),
    figure('messages pushed', number(s.pushed), 'pushed'),
    figure('messages delivered', number(s.delivered), 'delivered'),
    figure('messages pushed / s', NOT_YET, 'pushed-rate'),
    figure('messages delivered / s', NOT_YET, 'delivered-rate'),
    figure('messages dropped', number(s.dropped), 'dropped'),
    figure('messages expired', number(s.expired), 'expired'),
    figure('groups running', number(s.active), 'active'),
    figure('groups paused', number(s.pausedGroups), 'paused-groups'),
    figure('messages redelivered', number(s.redelivered), 'redelivered'),
    figure('messages in dead batches', number(s.dead), 'dead'),
    figure('lag', duration(s.lagMs), 'lag'),
  ];
  return card(queue, time, title(queue, 'FixedQueue', fixedMode(queue)), figures, [
    '<h3>hottest groups</h3>',
    table(['group', 'messages', 'due'], hottest, 'no group holds messages'),
    ...pausedTable(queue, time),
    ...overdueTable(queue),
    ...(queue.delivery === 'at-least-once'
      ? [
          '<h3>dead batches (a row per batch, with its count of messages)</h3>',
          table(['group', 'messages', 'attempts', 'last error', 'died'], queue.dead.map(dead), 'no dead batch'),
        ]
      : []),
  ]);
}

function delayCard(queue: DelayOverview, time: number): string {
  const s = queue.stats;
  const upcoming = queue.upcoming.slice(0, 5).map((t) => `<tr>${cell(t.id)}${cell(ago(time - t.runAt))}</tr>`);
  const dead = (t: DeadSummary) =>
    `<tr data-dead-id="${escapeHtml(t.id)}">${cell(t.id)}${cell(t.attempts, ' class="num tight"')}${cell(firstLine(t.lastError))}${cell(ago(time - t.diedAt), ' class="tight"')}</tr>`;
  const figures = [
    figure('tasks scheduled', number(s.scheduled), 'scheduled'),
    figure('tasks running', number(s.active), 'active'),
    figure('tasks due, waiting', number(s.due), 'due'),
    figure('dead tasks', number(s.dead), 'dead'),
    figure('deliveries (fired)', number(s.fired), 'fired'),
    figure('tasks completed', number(s.completed), 'completed'),
    figure('deliveries / s', NOT_YET, 'fired-rate'),
    figure('lag', duration(s.lagMs), 'lag'),
  ];
  return card(queue, time, title(queue, 'DelayQueue'), figures, [
    '<h3>upcoming</h3>',
    table(['task', 'due'], upcoming, 'nothing scheduled'),
    ...overdueTable(queue),
    '<h3>dead tasks</h3>',
    table(['task', 'attempts', 'last error', 'died'], queue.dead.map(dead), 'no dead task'),
  ]);
}

/** A queue's card: its title, what its record says, its figures, then its tables. */
function card(queue: QueueOverview, time: number, heading: string, figures: string[], tables: string[]): string {
  return [
    `<section data-queue="${escapeHtml(queue.name)}">`,
    heading,
    ...recordLines(queue, time),
    '<div class="figures">',
    ...figures,
    '</div>',
    ...tables,
    '</section>',
  ].join('');
}
