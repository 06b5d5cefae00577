import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DemoConfig } from '../../demo.config';
import { REPORTING } from '../games.constants';

/** What the reporters send: one batch of one game. */
export interface Report {
  kind: string;
  game: string;
  events: { game: string; type: string; ts: number }[];
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
  /** Reporting rules this batch breaks; empty when it follows them. */
  violations: string[];
}

export interface SinkTotals {
  batches: number;
  events: number;
  largestBatch: number;
  /** Age of the oldest event ever received, at its arrival. */
  oldestAgeMs: number;
  /** Batches that broke a reporting rule. */
  violations: number;
}

/** Recent batches kept for GET /reports; older ones only count in the totals. */
const KEPT = 20_000;
const DEFAULT_LIMIT = 100;
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * Stands in for the upstream reporting service: a separate HTTP server, as the real one would be,
 * that records every batch it receives and checks it against the reporting rules, so that the demo
 * (and its tests) show from the receiving end that the rules hold.
 *
 *   POST /reports                                   a batch: { kind, game, events }
 *   GET  /reports[?game=...][&kind=...][&limit=n]   totals and the latest n (100) batches
 */
@Injectable()
export class ReportSink implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Upstream');
  private readonly server: Server = createServer((req, res) => this.route(req, res));
  private readonly recent: RecordedBatch[] = [];
  private readonly sums: SinkTotals = { batches: 0, events: 0, largestBatch: 0, oldestAgeMs: 0, violations: 0 };
  private address?: string;

  constructor(private readonly config: DemoConfig) {}

  /** Base URL of the sink, once it listens. */
  get url(): string {
    if (!this.address) throw new Error('the upstream report sink is not listening yet');
    return this.address;
  }

  totals(): SinkTotals {
    return { ...this.sums };
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
        this.record(body as Report);
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
      violations: [],
    };
    const age = receivedAt - batch.oldestTs;
    if (games.length !== 1 || games[0] !== report.game)
      batch.violations.push(`holds events of ${games.join(', ')} in a report for ${report.game}`);
    if (batch.count > REPORTING.batchSize)
      batch.violations.push(`${batch.count} events, more than ${REPORTING.batchSize}`);
    if (age > REPORTING.maxAgeMs) batch.violations.push(`an event ${Math.round(age / 1000)} s old`);
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
  }

  private list(query: URLSearchParams): { totals: SinkTotals; batches: RecordedBatch[] } {
    const game = query.get('game');
    const kind = query.get('kind');
    const limit = Math.min(KEPT, Math.max(1, Number(query.get('limit') ?? DEFAULT_LIMIT) || DEFAULT_LIMIT));
    const batches = this.recent
      .slice(-KEPT)
      .filter((batch) => (game === null || batch.game === game) && (kind === null || batch.kind === kind));
    return { totals: this.totals(), batches: batches.slice(-limit) };
  }
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
  if (!Array.isArray(report.events) || report.events.length === 0) return 'a report needs a non-empty events array';
  if (
    !report.events.every(
      (event) => typeof event?.game === 'string' && typeof event.type === 'string' && Number.isFinite(event.ts),
    )
  ) {
    return 'every event needs a game, a type and a ts';
  }
  return undefined;
}
