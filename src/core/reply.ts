import type { Encoding } from "./encoding.js";
import type { ErrorKind } from "./errors.js";
import type { Sample } from "./sample.js";

/** One answer to a query: a sample, or an error a queryable (or the router) reported. */
export type Reply = { readonly kind: "ok"; readonly sample: Sample } | ReplyError;

/** An error reply; `errorKind` says what went wrong (`internal` when the queryable did not say). */
export interface ReplyError {
  readonly kind: "err";
  readonly payload: Buffer;
  readonly encoding: Encoding;
  readonly errorKind: ErrorKind;
}

/** How the replies to one query are merged (see `ConsolidationMode` in consolidate.ts). */
export type Consolidation = "latest" | "none" | "monotonic" | "auto";
