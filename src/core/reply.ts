import type { Buffer } from "node:buffer";
import type { Encoding } from "./encoding.js";
import type { ErrorKind } from "./errors.js";
import type { Sample, SourceInfo } from "./sample.js";

/** One answer to a query: a sample, or an error a queryable (or the router) reported. */
export type Reply = { readonly kind: "ok"; readonly sample: Sample } | ReplyError;

/**
 * An ok reply made with `new`. Where many replies are held across collections (the first entries
 * of a wide GET, kept while the rest streams), an object literal would teach V8 to allocate that
 * literal's objects in the old generation, and each would then keep its young sample alive
 * through the next scavenges; objects made with `new` are never placed so.
 */
export class OkReply {
  readonly kind = "ok";
  constructor(readonly sample: Sample) {}
}

/** An error reply; `errorKind` says what went wrong (`internal` when the queryable did not say). */
export interface ReplyError {
  readonly kind: "err";
  readonly payload: Buffer;
  readonly encoding: Encoding;
  readonly errorKind: ErrorKind;
  /** Who sent the error (zenoh's source info), when the queryable said. */
  readonly sourceInfo?: SourceInfo;
}

/** How the replies to one query are merged (see `ConsolidationMode` in consolidate.ts). */
export type Consolidation = "latest" | "none" | "monotonic" | "auto";
