import { DEFAULT_FACE_LIMITS } from "../door/limits.js";
import type { RemoteLimits } from "./connection.js";

/** The remote API's limits when the config says nothing (the schema's defaults: docs/remote-api.md). */
export const DEFAULT_LIMITS: RemoteLimits & { maxFrameBytes: number; maxConnections: number } = {
  ...DEFAULT_FACE_LIMITS,
  maxBufferedBytes: 16 * 1024 * 1024,
  maxFrameBytes: 16 * 1024 * 1024,
  maxConnections: 1_000,
};
