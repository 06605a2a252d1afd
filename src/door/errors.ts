/**
 * How zest's errors look to a zenoh client, in one place for both zenoh doors
 * (docs/zenoh-protocol.md, docs/remote-api.md). A failed remote-API request gets a ResponseError
 * whose text the client throws as `Error(text)`; a refused or failed get gets an error reply
 * (payload and encoding). Both start with the error kind, so a client can tell a refusal
 * (`forbidden: …`) from a bad key expression (`bad_input: …`) or an overload (`unavailable: …`).
 */
import { Buffer } from "node:buffer";
import { Encoding } from "../core/encoding.js";
import { toZestError } from "../core/errors.js";
import type { ReplyError } from "../core/reply.js";

/** The ResponseError text for a failed request. */
export function responseErrorText(err: unknown): string {
  const z = toZestError(err);
  return `${z.kind}: ${z.message}`;
}

/** An error reply to a get that zest itself refuses (access, limits), before any queryable runs. */
export function refusalReply(err: unknown): ReplyError {
  const z = toZestError(err);
  return { kind: "err", payload: Buffer.from(responseErrorText(z)), encoding: Encoding.TEXT_PLAIN, errorKind: z.kind };
}
