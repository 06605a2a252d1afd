import type { Queryable, Session } from "../core/session.js";
import type { RouterMetrics } from "./metrics.js";

/**
 * The metrics entry of the admin space: `@/router/<zid>/metrics` (Prometheus text), a queryable
 * of its own beside the admin space, computed on each read; read it whole with `?_raw=true`
 * (docs/metrics.md). The OpenAPI entry is the REST door's (rest/openapi.ts).
 */
export function declareAdminExtras(session: Session, metrics: RouterMetrics): { close(): void } {
  const metricsKey = `@/router/${session.zid}/metrics`;
  const declared: Queryable = session.declareQueryable(metricsKey, async (query) => {
    query.reply(metricsKey, await metrics.text(), { encoding: metrics.contentType });
  });
  return {
    close() {
      declared.undeclare();
    },
  };
}
