/** What every benchmark module returns from `run()`. */
export interface BenchResult {
  /** The benchmark's short name, as given on the command line (`npm run bench -- get`). */
  name: string;
  /** Raw figures, with their unit in the name (`zestReqPerSec`, `p99Ms`, `rssMb`...). */
  figures: Record<string, number>;
  /** The figure the target is stated on, usually subject / baseline measured in the same run. */
  ratio?: number;
  /** The target in words, e.g. `>= 0.85x`. */
  target?: string;
  /** Whether the target is met; absent when there is nothing to meet ("report"). */
  pass?: boolean;
  /** One human line with the raw figures, e.g. `zest 12,345 req/s / node:http 14,000 req/s`. */
  summary?: string;
  /** Caveats found while measuring (saturated load generator, errors, lost events...). */
  notes?: string[];
  /**
   * The most CPU other processes (or the hypervisor) took while it measured, in % of one core.
   * Above INTERFERENCE_LIMIT_PCT (lib/proc.ts) the runner marks pass/miss as unreliable.
   */
  interferencePct?: number;
  /**
   * Markdown the README takes as it is, for results a table row cannot hold (`growth`'s steps):
   * the runner appends it to latest.md under the benchmark's title.
   */
  markdown?: string;
}

/** A benchmark module: `bench/suites/<name>.ts`. */
export interface BenchModule {
  run(): Promise<BenchResult>;
}
