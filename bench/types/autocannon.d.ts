/**
 * The slice of autocannon 8's programmatic API the benchmarks use (the package ships no types).
 * See node_modules/autocannon/README.md for the full option list.
 */
declare module "autocannon" {
  import type { EventEmitter } from "node:events";

  namespace autocannon {
    interface Options {
      url: string;
      connections?: number;
      /** Seconds. */
      duration?: number;
      amount?: number;
      pipelining?: number;
      /** Seconds before a request counts as a timeout. */
      timeout?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      title?: string;
      bailout?: number;
      expectBody?: string;
      excludeErrorStats?: boolean;
      skipAggregateResult?: boolean;
    }

    /** An hdr-histogram summary. */
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      sent?: number;
      p50: number;
      p90: number;
      p99: number;
      p99_9: number;
    }

    interface Result {
      title?: string;
      url: string;
      requests: Histogram;
      latency: Histogram;
      throughput: Histogram;
      /** Seconds, rounded to 10 ms. */
      duration: number;
      errors: number;
      timeouts: number;
      mismatches: number;
      non2xx: number;
      "2xx": number;
      connections: number;
      pipelining: number;
      start: Date;
      finish: Date;
    }

    interface Instance extends EventEmitter {
      stop(): void;
    }
  }

  function autocannon(
    opts: autocannon.Options,
    cb: (err: Error | null, result: autocannon.Result) => void,
  ): autocannon.Instance;

  export default autocannon;
}
