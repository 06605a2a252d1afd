declare module "parse-prometheus-text-format" {
  /** One metric family of the Prometheus text format, as the parser returns it. */
  export interface MetricFamily {
    name: string;
    help: string;
    type: string;
    metrics: Array<{
      value?: string;
      labels?: Record<string, string>;
      buckets?: Record<string, string>;
      count?: string;
      sum?: string;
    }>;
  }
  export default function parsePrometheusTextFormat(text: string): MetricFamily[];
}
