import type { RemoteLimits } from "./connection.js";

/** The remote API's limits when the config says nothing (the schema's defaults: docs/remote-api.md). */
export const DEFAULT_LIMITS: RemoteLimits & { maxFrameBytes: number; maxConnections: number } = {
  maxDeclarations: 10_000,
  maxPendingGets: 1_000,
  maxPendingQueries: 1_000,
  maxBufferedBytes: 16 * 1024 * 1024,
  maxQueryTimeoutMs: 600_000,
  maxFrameBytes: 16 * 1024 * 1024,
  maxConnections: 1_000,
};
