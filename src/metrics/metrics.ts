import { performance } from "node:perf_hooks";
import type { IncomingMessage, ServerResponse } from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client";
import { RequestSeries } from "./request-series.js";
import type { FabricStatus } from "../core/fabric.js";

/** What the SSE hub reports, read on scrape. */
export interface SseSnapshot {
  readonly streams: number;
  readonly logEntries: number;
  readonly opened: number;
  readonly dropped: number;
  readonly resumed: number;
  readonly resets: number;
  readonly eventsSent: number;
  readonly bytesSent: number;
}

/** What the long-poll hub reports (docs/long-poll.md), read on scrape. */
export interface LongPollSnapshot {
  readonly waiting: number;
  readonly parked: number;
  readonly woken: number;
  readonly refused: number;
}

/** One storage as the metrics show it; sizes only where the backend can tell them cheaply. */
export interface StorageSnapshot {
  readonly name: string;
  readonly volume: string;
  readonly samples?: number;
  readonly bytes?: number;
}

/** One front door's counts (docs/adding-a-front-door.md). */
export interface DoorSnapshot {
  readonly door: string;
  readonly connections: number;
  readonly refused: number;
  readonly requests?: number;
}

/** The parts of the router the metrics read on scrape (never on the request path). */
export interface MetricsSources {
  storages(): StorageSnapshot[];
  fabric(): FabricStatus | undefined;
  /** The running front doors' counts. */
  doors(): DoorSnapshot[];
}

/** What the HTTP door reports (`reportHttp`): bytes written to its clients, its SSE hub. */
interface HttpSource {
  /** The REST variant served: the `variant` label of the HTTP series. */
  readonly variant: string;
  responseBytes(): number;
  sse?(): SseSnapshot | undefined;
  /** The long-poll waits (docs/long-poll.md); absent: the metrics read 0. */
  longPoll?(): LongPollSnapshot | undefined;
}

/** Request latency buckets, in seconds: 0.25 ms to 10 s. */
const LATENCY_BUCKETS = [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The process-wide metrics (event-loop lag, GC, memory, CPU): one set per process, shared by every router in it. */
let processRegistry: Registry | undefined;

function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * One router's metrics in Prometheus form (docs/metrics.md), in a registry of its own, so two
 * routers in one process never collide. Request counters are updated on the request path through
 * plain counts (`RequestSeries`); everything else is read from its source on scrape.
 */
export class RouterMetrics {
  readonly registry = new Registry();
  private readonly series: RequestSeries;
  private http: HttpSource | undefined;

  constructor(sources: MetricsSources) {
    const r = this.registry;
    // No HTTP door (REST off): the HTTP series carry an empty variant, and count nothing.
    this.series = new RequestSeries(
      r,
      () => this.http?.variant ?? "",
      LATENCY_BUCKETS,
      () => this.http?.responseBytes() ?? 0,
    );
    sseMetrics(r, () => this.http?.sse?.());
    longPollMetrics(r, () => this.http?.longPoll?.());
    storageMetrics(r, sources);
    fabricMetrics(r, sources);
    doorMetrics(r, sources);
  }

  /** The HTTP door registers what it counts: read on scrape. */
  reportHttp(source: HttpSource): void {
    this.http = source;
  }

  /** Counts `res` when it closes (answered, or the client left). */
  track(req: IncomingMessage, res: ServerResponse): void {
    const start = performance.now();
    this.bodyIn(req);
    // One closure per request: cheaper than properties added to every response object, whose
    // shape they change (and whose reads in the listener then miss V8's inline caches).
    res.on("close", () => this.closed(req, res, start));
  }

  private closed(req: IncomingMessage, res: ServerResponse, start: number): void {
    // An SSE stream lasts as long as the client wants: its duration is no latency.
    const sse = res.statusCode === 200 && isEventStream(req.headers.accept);
    const seconds = sse ? undefined : (performance.now() - start) / 1000;
    // A response that never got its status out (the client left first) is counted with status 0.
    this.observe(req.method ?? "OTHER", res.headersSent ? res.statusCode : 0, seconds);
  }

  /**
   * Counts a response just ended: `start` is the time taken when the request came. A client that
   * left before the answer counts as status 0.
   */
  served(req: IncomingMessage, res: ServerResponse, start: number): void {
    this.bodyIn(req);
    this.observe(req.method ?? "OTHER", req.socket.destroyed ? 0 : res.statusCode, (performance.now() - start) / 1000);
  }

  /** Counts the request body's declared length. */
  private bodyIn(req: IncomingMessage): void {
    const len = req.headers["content-length"];
    if (len !== undefined) this.series.bytesIn += Number(len) || 0;
  }

  /** @internal */
  observe(method: string, status: number, seconds: number | undefined): void {
    // Methods are bounded by what the server accepts; anything else is counted as OTHER.
    this.series.observe(knownMethod(method), status, seconds);
  }

  /** The exposition text: this router's metrics, then the process's. */
  async text(): Promise<string> {
    return (await this.registry.metrics()) + (await processMetrics().metrics());
  }

  /** Content type of `text()` (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * Methods counted by name; any other is counted as OTHER (a client must not mint label values).
 * A `switch`, not a `Set`: the parser's method strings are internalized, so each case is one
 * pointer comparison, where a set lookup hashes on every request.
 */
function knownMethod(method: string): string {
  switch (method) {
    case "GET":
    case "HEAD":
    case "PUT":
    case "PATCH":
    case "DELETE":
    case "OPTIONS":
    case "POST":
      return method;
    default:
      return "OTHER";
  }
}

function isEventStream(accept: string | undefined): boolean {
  return accept?.trimStart().toLowerCase().startsWith("text/event-stream") === true;
}

/** A counter whose value is read from `read()` on scrape (undefined: no sample). */
function counterOf(r: Registry, name: string, help: string, read: () => number | undefined): void {
  new Counter({ name, help, registers: [r], collect: readInto(read, (c: Counter, v) => c.inc(v)) });
}

/** A gauge whose value is read from `read()` on scrape (undefined: no sample). */
function gaugeOf(r: Registry, name: string, help: string, read: () => number | undefined): void {
  new Gauge({ name, help, registers: [r], collect: readInto(read, (g: Gauge, v) => g.set(v)) });
}

function readInto<M extends { reset(): void }>(
  read: () => number | undefined,
  put: (metric: M, v: number) => void,
): (this: M) => void {
  return function (this: M) {
    const v = read();
    this.reset();
    if (v !== undefined) put(this, v);
  };
}

function sseMetrics(r: Registry, read: () => SseSnapshot | undefined): void {
  const sources = { sse: read };
  gaugeOf(r, "zest_sse_streams", "Open SSE streams", () => sources.sse()?.streams ?? 0);
  gaugeOf(r, "zest_sse_resume_log_entries", "Events kept in the SSE resume log", () => sources.sse()?.logEntries ?? 0);
  counterOf(r, "zest_sse_streams_opened_total", "SSE streams opened", () => sources.sse()?.opened ?? 0);
  counterOf(
    r,
    "zest_sse_drops_total",
    "SSE streams closed by the router because the client fell too far behind",
    () => sources.sse()?.dropped ?? 0,
  );
  counterOf(
    r,
    "zest_sse_resumes_total",
    "SSE reconnections that got their missed events replayed",
    () => sources.sse()?.resumed ?? 0,
  );
  counterOf(
    r,
    "zest_sse_resets_total",
    "SSE reconnections told RESET (missed events unknown)",
    () => sources.sse()?.resets ?? 0,
  );
  counterOf(
    r,
    "zest_sse_events_total",
    "SSE events written, every stream counted",
    () => sources.sse()?.eventsSent ?? 0,
  );
  counterOf(r, "zest_sse_bytes_total", "SSE bytes written, every stream counted", () => sources.sse()?.bytesSent ?? 0);
}

function doorMetrics(r: Registry, sources: MetricsSources): void {
  new Gauge({
    name: "zest_door_connections",
    help: "Open connections, per front door",
    labelNames: ["door"],
    registers: [r],
    collect() {
      this.reset();
      for (const d of sources.doors()) this.labels(d.door).set(d.connections);
    },
  });
  new Counter({
    name: "zest_door_connections_refused_total",
    help: "Connections refused by a front door's caps (per address and in total)",
    labelNames: ["door"],
    registers: [r],
    collect() {
      this.reset();
      for (const d of sources.doors()) this.labels(d.door).inc(d.refused);
    },
  });
  new Counter({
    name: "zest_door_requests_total",
    help: "Requests (or operations) a front door handled, where the door counts them",
    labelNames: ["door"],
    registers: [r],
    collect() {
      this.reset();
      for (const d of sources.doors()) if (d.requests !== undefined) this.labels(d.door).inc(d.requests);
    },
  });
}

function longPollMetrics(r: Registry, read: () => LongPollSnapshot | undefined): void {
  gaugeOf(r, "zest_long_polls", "Long-poll GETs parked now", () => read()?.waiting ?? 0);
  counterOf(r, "zest_long_polls_parked_total", "Long-poll GETs parked", () => read()?.parked ?? 0);
  counterOf(r, "zest_long_polls_woken_total", "Long-poll waits ended by a matching change", () => read()?.woken ?? 0);
  counterOf(r, "zest_long_polls_refused_total", "Long-poll GETs refused for the caps", () => read()?.refused ?? 0);
}

function storageMetrics(r: Registry, sources: MetricsSources): void {
  new Gauge({
    name: "zest_storages",
    help: "Storages configured on this router",
    registers: [r],
    collect() {
      this.set(sources.storages().length);
    },
  });
  new Gauge({
    name: "zest_storage_samples",
    help: "Samples (keys with a value) held by a storage, where its backend can tell cheaply",
    labelNames: ["storage", "volume"],
    registers: [r],
    collect() {
      this.reset();
      for (const s of sources.storages()) if (s.samples !== undefined) this.labels(s.name, s.volume).set(s.samples);
    },
  });
  new Gauge({
    name: "zest_storage_bytes",
    help: "Bytes held by a storage, where its backend can tell cheaply",
    labelNames: ["storage", "volume"],
    registers: [r],
    collect() {
      this.reset();
      for (const s of sources.storages()) if (s.bytes !== undefined) this.labels(s.name, s.volume).set(s.bytes);
    },
  });
}

function fabricMetrics(r: Registry, sources: MetricsSources): void {
  const detail = (): Record<string, unknown> => sources.fabric()?.detail ?? {};
  const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
  gaugeOf(r, "zest_fabric_connected", "1 while the link to the other routers is up (always 1 without a fabric)", () =>
    sources.fabric()?.connected === false ? 0 : 1,
  );
  gaugeOf(r, "zest_fabric_peers", "Other routers reachable through the fabric", () => {
    const routers = detail().routers;
    return Array.isArray(routers) ? routers.length : 0;
  });
  gaugeOf(
    r,
    "zest_fabric_acks_pending",
    "Writes waiting for other routers' acknowledgements",
    () => num(detail().pendingAcks) ?? 0,
  );
  gaugeOf(
    r,
    "zest_fabric_queries_pending",
    "Queries waiting for other routers' replies",
    () => num(detail().pendingQueries) ?? 0,
  );
  counterOf(r, "zest_fabric_reconnects_total", "Reconnections of the fabric (when the fabric reports them)", () =>
    num(detail().reconnects),
  );
  new Counter({
    name: "zest_fabric_events_total",
    help: "Fabric counters as the fabric reports them (samples sent, received, resent, queries...)",
    labelNames: ["event"],
    registers: [r],
    collect() {
      this.reset();
      for (const [k, v] of Object.entries(detail())) {
        const n = num(v);
        if (n !== undefined && k !== "pendingAcks" && k !== "pendingQueries" && k !== "reconnects")
          this.labels(k).inc(n);
      }
    },
  });
}
