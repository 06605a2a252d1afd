import {
  Counter,
  type Metric,
  type MetricObjectWithValues,
  type MetricValue,
  type MetricValueWithName,
  type Registry,
} from "prom-client";

/**
 * The HTTP request metrics, counted in plain numbers on the request path and turned into
 * Prometheus series only on scrape. prom-client's labelled `inc`/`observe` hash the label set
 * and build closures on every call, which showed as about a tenth of a cached GET's CPU
 * (bench/README.md, `mixed`); these counts cost an array increment.
 */
export class RequestSeries {
  /** method → status → answered count. */
  private readonly counts = new Map<string, Map<number, { n: number }>>();
  /** The last request's method and status, and their count and histogram. */
  private lastMethod = "";
  private lastStatus = -1;
  private lastCell: { n: number } | undefined;
  private lastHistogram: Histogram | undefined;
  /** method → latency histogram (per-bucket counts, the last one +Inf, then sum and count). */
  private readonly latency = new Map<string, Histogram>();
  bytesIn = 0;

  constructor(
    r: Registry,
    /** The REST variant's name, read on scrape (the label of every series). */
    private readonly variant: () => string,
    private readonly bounds: readonly number[],
    /** Bytes written to clients, read on scrape. */
    bytesOut: () => number,
  ) {
    const self = this;
    new Counter({
      name: "zest_http_requests_total",
      help: "HTTP requests answered, by method, REST variant and status",
      labelNames: ["method", "variant", "status"],
      registers: [r],
      collect() {
        this.reset();
        for (const [method, byStatus] of self.counts)
          for (const [status, { n }] of byStatus) this.labels(method, self.variant(), String(status)).inc(n);
      },
    });
    r.registerMetric(
      this.histogram(
        "zest_http_request_duration_seconds",
        "Time from request to response end (SSE streams excluded), by method and variant",
      ),
    );
    new Counter({
      name: "zest_http_request_bytes_total",
      help: "Request body bytes received (as declared by Content-Length)",
      labelNames: ["variant"],
      registers: [r],
      collect: setTo(() => this.bytesIn, variant),
    });
    new Counter({
      name: "zest_http_response_bytes_total",
      help: "Response bytes written to the socket, headers and SSE streams included",
      labelNames: ["variant"],
      registers: [r],
      collect: setTo(bytesOut, variant),
    });
  }

  /** Counts one answered request (`seconds` undefined: no latency, e.g. an SSE stream). */
  observe(method: string, status: number, seconds: number | undefined): void {
    // Most requests repeat the previous one's method and status (a run of PUTs answered 200):
    // their counts are found without a lookup.
    let cell = this.lastCell;
    if (method !== this.lastMethod || status !== this.lastStatus || cell === undefined) {
      let byStatus = this.counts.get(method);
      if (byStatus === undefined) {
        byStatus = new Map();
        this.counts.set(method, byStatus);
      }
      cell = byStatus.get(status);
      if (cell === undefined) {
        cell = { n: 0 };
        byStatus.set(status, cell);
      }
      this.lastMethod = method;
      this.lastStatus = status;
      this.lastCell = cell;
      this.lastHistogram = undefined;
    }
    cell.n++;
    if (seconds === undefined) return;
    let h = this.lastHistogram;
    if (h === undefined) {
      h = this.latency.get(method);
      if (h === undefined) {
        h = { buckets: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 };
        this.latency.set(method, h);
      }
      this.lastHistogram = h;
    }
    let i = 0;
    while (i < this.bounds.length && seconds > this.bounds[i]!) i++;
    h.buckets[i]!++;
    h.sum += seconds;
    h.count++;
  }

  /** A histogram metric read from `latency`, in the shape prom-client's registry prints. */
  private histogram(name: string, help: string): Metric {
    const get = async (): Promise<Omit<MetricObjectWithValues<MetricValue<string>>, "collect">> => {
      const values: Array<MetricValueWithName<string>> = [];
      for (const [method, h] of this.latency) {
        let acc = 0;
        for (let i = 0; i <= this.bounds.length; i++) {
          acc += h.buckets[i]!;
          values.push({
            metricName: `${name}_bucket`,
            labels: { le: i < this.bounds.length ? this.bounds[i]! : "+Inf", method, variant: this.variant() },
            value: acc,
          });
        }
        values.push({ metricName: `${name}_sum`, labels: { method, variant: this.variant() }, value: h.sum });
        values.push({ metricName: `${name}_count`, labels: { method, variant: this.variant() }, value: h.count });
      }
      return { name, help, type: "histogram" as never, values, aggregator: "sum" };
    };
    return {
      name,
      help,
      type: "histogram" as never,
      aggregator: "sum",
      labelNames: ["method", "variant"],
      get,
      reset: () => {
        this.latency.clear();
        this.lastHistogram = undefined;
      },
    } as unknown as Metric;
  }
}

/** Per-bucket counts (the last one +Inf), then sum and count. */
interface Histogram {
  buckets: number[];
  sum: number;
  count: number;
}

/** A counter's collect hook that sets its one series to `read()`. */
function setTo(read: () => number, variant: () => string): (this: Counter<"variant">) => void {
  return function (this: Counter<"variant">) {
    this.reset();
    this.labels(variant()).inc(read());
  };
}
