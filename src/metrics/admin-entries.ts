import { Encoding } from "../core/encoding.js";
import type { Queryable, Session } from "../core/session.js";
import type { RouterMetrics } from "./metrics.js";

/**
 * The metrics and OpenAPI entries of the admin space: `@/router/<zid>/metrics` (Prometheus text)
 * and `@/router/<zid>/openapi` (the API description, JSON). Queryables of their own beside the
 * admin space, computed on each read; read them whole with `?_raw=true` (docs/metrics.md).
 */
export function declareAdminExtras(
  session: Session,
  metrics: RouterMetrics,
  openapi: () => unknown,
): { close(): void } {
  const prefix = `@/router/${session.zid}`;
  const metricsKey = `${prefix}/metrics`;
  const openapiKey = `${prefix}/openapi`;
  let openapiText: string | undefined;
  const declared: Queryable[] = [
    session.declareQueryable(metricsKey, async (query) => {
      query.reply(metricsKey, await metrics.text(), { encoding: metrics.contentType });
    }),
    session.declareQueryable(openapiKey, (query) => {
      // The document depends only on the variant and the router id: built once.
      openapiText ??= JSON.stringify(openapi());
      query.reply(openapiKey, openapiText, { encoding: Encoding.APP_JSON });
    }),
  ];
  return {
    close() {
      for (const q of declared) q.undeclare();
    },
  };
}
