import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DemoConfig } from '../../demo.config';
import { GameSequences } from '../game-sequences';
import { MAX_EVENT_AGE_MS, MAX_EVENTS_PER_REPORT } from '../games.constants';
import { type Losses, SequenceCheck, type StreamCounts } from './sequence-check';

/** What the reporters send: one batch of one game. */
export interface Report {
  kind: string;
  game: string;
  /** The queue's delivery number of this batch (1, or more when delivered again). */
  attempt?: number;
  events: NumberedEvent[];
}

/** What the sink reads of an event: its game, type, time and place in its stream. */
export interface NumberedEvent {
  game: string;
  type: string;
  ts: number;
  run: string;
  seq: number;
}

/** What the sink keeps of a report: enough to check the rules, not the events themselves. */
export interface RecordedBatch {
  kind: string;
  game: string;
  count: number;
  /** Distinct games of the events. */
  games: string[];
  /** Distinct event types. */
  types: string[];
  oldestTs: number;
  newestTs: number;
  receivedAt: number;
  attempt: number;
  /** Lowest and highest event numbers (this run's events only; null when it holds none). */
  firstSeq: number | null;
  lastSeq: number | null;
  /** Events of this batch that had arrived before (a redelivery). */
  duplicates: number;
  /** Reporting rules this batch breaks; empty when it follows them. */
  violations: string[];
}

export interface SinkTotals {
  batches: number;
  events: number;
  largestBatch: number;
  /** Age of the oldest event ever received, at its arrival. */
  oldestAgeMs: number;
  /** Batches that broke a reporting rule, plus gaps that stayed unexplained. */
  violations: number;
  /** Reports refused on purpose (the flaky game's). */
  refused: number;
  /** Events numbered by an earlier run of the producer (left in Redis), not held to this run's order. */
  earlierRun: number;
  /** Every stream (a game's live or digest events) of this run, summed. */
  streams: StreamCounts;
}

/** A game's streams, as GET /reports?game= shows them. */
export type GameStreams = Partial<Record<string, StreamCounts>>;

/** Recent batches kept for GET /reports; older ones only count in the totals. */
const KEPT = 20_000;
const DEFAULT_LIMIT = 100;
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/**
 * A gap must be explained this soon after it shows. Loss notices come in process, before the reports
 * after them in practice; the grace keeps the verdict from resting on that.
 */
const GAP_GRACE_MS = 2000;
/** Share of the flaky game's reports refused: most before recording them, some after (the answer got lost). */
const REFUSED = 0.5;
const ANSWER_LOST = 0.1;

interface Stream {
  kind: string;
  game: string;
  check: SequenceCheck;
  /** Unexplained events already reported as a violation. */
  flagged: number;
  /** Since when some of its missing events are unexplained. */
  unexplainedSince?: number;
}

/**
 * Stands in for the upstream reporting service: a separate HTTP server, as the real one would be,
 * that records every batch it receives and checks it against the reporting rules, so that the demo
 * (and its tests) show from the receiving end that the rules hold: one game per batch, at most 128
 * events, none older than 3 minutes, and per game and kind, events in the order they were pushed with
 * none missing unless the queue said why (see SequenceCheck). It refuses some of one flaky game's
 * reports on purpose (DEMO_FLAKY_GAME), so that retries, duplicates and dead letters show.
 *
 *   POST /reports                                   a batch: { kind, game, attempt, events }
 *   GET  /reports[?game=...][&kind=...][&limit=n]   totals (and the game's streams) and the latest n (100) batches
 */
@Injectable()
export class ReportSink implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Upstream');
  private readonly server: Server = createServer((req, res) => this.route(req, res));
  private readonly recent: RecordedBatch[] = [];
  private readonly sums = { batches: 0, events: 0, largestBatch: 0, oldestAgeMs: 0, violations: 0, refused: 0 };
  private earlierRun = 0;
  /** This run's streams, by kind and game. */
  private readonly streams = new Map<string, Stream>();
  /** Streams with missing events nothing explains yet. */
  private readonly suspects = new Set<Stream>();
  private address?: string;

  constructor(
    private readonly config: DemoConfig,
    private readonly sequences: GameSequences,
  ) {}

  /** Base URL of the sink, once it listens. */
  get url(): string {
    if (!this.address) throw new Error('the upstream report sink is not listening yet');
    return this.address;
  }

  totals(): SinkTotals {
    this.audit(Date.now());
    const streams = [...this.streams.values()].map((stream) => stream.check.snapshot());
    return { ...this.sums, earlierRun: this.earlierRun, streams: sumCounts(streams) };
  }

  /** The queue let these numbered events go (evicted, expired, ...): a gap holding them is no violation. */
  lost(kind: string, game: string, run: string, losses: Losses): void {
    if (run !== this.sequences.run) return;
    const stream = this.stream(kind, game);
    stream.check.lost(losses);
    this.watch(stream, Date.now());
  }

  /** The queue dead-lettered these events; they may come back (re-queued) out of order. */
  dead(kind: string, game: string, events: NumberedEvent[]): void {
    const ours = events.filter((event) => event.run === this.sequences.run);
    if (ours.length === 0) return;
    const stream = this.stream(kind, game);
    stream.check.dead(ours.map((event) => event.seq));
    this.watch(stream, Date.now());
  }

  // Listening before the application bootstraps: reporters start then, and must find it up.
  async onModuleInit(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.config.upstreamPort, this.config.host, () => resolve());
    });
    const { port } = this.server.address() as AddressInfo;
    this.address = `http://${this.config.host}:${port}`;
  }

  // After the queues' beforeApplicationShutdown: the reports still in flight then have arrived.
  async onApplicationShutdown(): Promise<void> {
    this.server.closeIdleConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private route(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://sink');
    if (url.pathname !== '/reports') return reply(res, 404, { message: 'not found' });
    if (req.method === 'GET') return reply(res, 200, this.list(url.searchParams));
    if (req.method !== 'POST') return reply(res, 405, { message: 'GET or POST' });
    readJson(req).then(
      (body) => {
        const problem = invalidReport(body);
        if (problem) return reply(res, 400, { message: problem });
        const report = body as Report;
        const refusal = report.game === this.config.flakyGame ? Math.random() : 1;
        if (refusal < REFUSED - ANSWER_LOST) return this.refuse(res, 'refused on purpose (DEMO_FLAKY_GAME)');
        this.record(report);
        if (refusal < REFUSED) return this.refuse(res, 'recorded, but the answer got lost (DEMO_FLAKY_GAME)');
        reply(res, 204);
      },
      (error: Error) => reply(res, 400, { message: error.message }),
    );
  }

  private record(report: Report): void {
    const receivedAt = Date.now();
    const games = [...new Set(report.events.map((event) => event.game))];
    const stamps = report.events.map((event) => event.ts);
    const batch: RecordedBatch = {
      kind: report.kind,
      game: report.game,
      count: report.events.length,
      games,
      types: [...new Set(report.events.map((event) => event.type))],
      oldestTs: Math.min(...stamps),
      newestTs: Math.max(...stamps),
      receivedAt,
      attempt: report.attempt ?? 1,
      firstSeq: null,
      lastSeq: null,
      duplicates: 0,
      violations: [],
    };
    const age = receivedAt - batch.oldestTs;
    if (games.length !== 1 || games[0] !== report.game)
      batch.violations.push(`holds events of ${games.join(', ')} in a report for ${report.game}`);
    if (batch.count > MAX_EVENTS_PER_REPORT)
      batch.violations.push(`${batch.count} events, more than ${MAX_EVENTS_PER_REPORT}`);
    if (age > MAX_EVENT_AGE_MS) batch.violations.push(`an event ${Math.round(age / 1000)} s old`);
    this.checkOrder(report, batch);
    if (batch.violations.length > 0) {
      this.sums.violations += 1;
      this.logger.error(`a ${report.kind} report for ${report.game} breaks the rules: ${batch.violations.join('; ')}`);
    }
    this.sums.batches += 1;
    this.sums.events += batch.count;
    this.sums.largestBatch = Math.max(this.sums.largestBatch, batch.count);
    this.sums.oldestAgeMs = Math.max(this.sums.oldestAgeMs, age);
    this.recent.push(batch);
    if (this.recent.length > KEPT * 2) this.recent.splice(0, KEPT);
    this.audit(receivedAt);
  }

  /** Feeds this run's events to their stream's check; events that arrived after a later one break the rules. */
  private checkOrder(report: Report, batch: RecordedBatch): void {
    const late: number[] = [];
    let stream: Stream | undefined;
    for (const { run, seq } of report.events) {
      if (run !== this.sequences.run) {
        this.earlierRun += 1;
        continue;
      }
      stream ??= this.stream(report.kind, report.game);
      batch.firstSeq = Math.min(batch.firstSeq ?? seq, seq);
      batch.lastSeq = Math.max(batch.lastSeq ?? seq, seq);
      const arrival = stream.check.receive(seq);
      if (arrival === 'duplicate') batch.duplicates += 1;
      else if (arrival === 'out-of-order') late.push(seq);
    }
    if (stream) this.watch(stream, batch.receivedAt);
    if (late.length > 0)
      batch.violations.push(`${late.length} events arrived after later ones (${late.slice(0, 5).join(', ')}...)`);
  }

  /** Watches a stream whose events changed: missing events nothing explains start the grace. */
  private watch(stream: Stream, now: number): void {
    if (stream.unexplainedSince !== undefined) return;
    if (stream.check.snapshot().unexplained > stream.flagged) {
      stream.unexplainedSince = now;
      this.suspects.add(stream);
    }
  }

  /** A gap still unexplained after the grace is a violation, once per unexplained event. */
  private audit(now: number): void {
    for (const stream of this.suspects) {
      const { unexplained } = stream.check.snapshot();
      if (unexplained <= stream.flagged) {
        this.suspects.delete(stream);
        stream.unexplainedSince = undefined;
      } else if (now - stream.unexplainedSince! >= GAP_GRACE_MS) {
        this.sums.violations += 1;
        this.logger.error(
          `${unexplained - stream.flagged} ${stream.kind} events of ${stream.game} are missing, and no drop, expiry or dead letter explains them`,
        );
        stream.flagged = unexplained;
        this.suspects.delete(stream);
        stream.unexplainedSince = undefined;
      }
    }
  }

  private stream(kind: string, game: string): Stream {
    const key = `${kind}\n${game}`;
    let stream = this.streams.get(key);
    if (!stream) {
      stream = { kind, game, check: new SequenceCheck(), flagged: 0 };
      this.streams.set(key, stream);
    }
    return stream;
  }

  private refuse(res: ServerResponse, message: string): void {
    this.sums.refused += 1;
    reply(res, 503, { message });
  }

  private list(query: URLSearchParams): { totals: SinkTotals; streams?: GameStreams; batches: RecordedBatch[] } {
    const game = query.get('game');
    const kind = query.get('kind');
    const limit = Math.min(KEPT, Math.max(1, Number(query.get('limit') ?? DEFAULT_LIMIT) || DEFAULT_LIMIT));
    const batches = this.recent
      .slice(-KEPT)
      .filter((batch) => (game === null || batch.game === game) && (kind === null || batch.kind === kind));
    const totals = this.totals();
    if (game === null) return { totals, batches: batches.slice(-limit) };
    const streams: GameStreams = {};
    for (const stream of this.streams.values()) {
      if (stream.game === game) streams[stream.kind] = stream.check.snapshot();
    }
    return { totals, streams, batches: batches.slice(-limit) };
  }
}

function sumCounts(all: StreamCounts[]): StreamCounts {
  const sum: StreamCounts = {
    received: 0,
    duplicates: 0,
    missing: 0,
    dead: 0,
    unexplained: 0,
    outOfOrder: 0,
    requeued: 0,
  };
  for (const counts of all) {
    for (const key of Object.keys(sum) as (keyof StreamCounts)[]) sum[key] += counts[key];
  }
  return sum;
}

function reply(res: ServerResponse, status: number, body?: unknown): void {
  res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
  res.end(body === undefined ? undefined : JSON.stringify(body));
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error(`body over ${MAX_BODY_BYTES} bytes`));
        req.destroy();
      } else {
        chunks.push(chunk);
      }
    });
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new Error('body is not JSON'));
      }
    });
    req.on('error', reject);
  });
}

function invalidReport(body: unknown): string | undefined {
  const report = body as Partial<Report> | null;
  if (typeof report?.kind !== 'string' || typeof report.game !== 'string') return 'a report needs a kind and a game';
  if (report.attempt !== undefined && !(Number.isInteger(report.attempt) && report.attempt >= 1))
    return 'attempt must be a positive integer';
  if (!Array.isArray(report.events) || report.events.length === 0) return 'a report needs a non-empty events array';
  if (
    !report.events.every(
      (event) =>
        typeof event?.game === 'string' &&
        typeof event.type === 'string' &&
        Number.isFinite(event.ts) &&
        typeof event.run === 'string' &&
        Number.isInteger(event.seq) &&
        event.seq >= 1,
    )
  ) {
    return 'every event needs a game, a type, a ts, a run and a seq (a positive integer)';
  }
  return undefined;
}
