/**
 * Conditional writes with one meaning for every front door (docs/conditional-writes.md): the
 * key holds one of some versions, any value, or none. A version is the encoding of the timestamp
 * of the sample a key holds (docs/storage-contract.md), the ETag REST answers.
 */
import { isWild } from "../keyexpr/index.js";
import { toZestError, ZestError } from "./errors.js";
import type { Reply } from "./reply.js";
import type { WriteCondition } from "./sample.js";
import type { Timestamp } from "./timestamp.js";

/** Most versions a `WriteIf.ifMatch` list may name. */
export const MAX_MATCH_VERSIONS = 16;
/** Longest version accepted in a condition (one is far shorter). */
export const MAX_VERSION_LENGTH = 256;
/** Tries of a write made on the version read (`ifMatch` with `*` or several versions). */
export const MATCH_TRIES = 3;

/**
 * The condition of `Session.putIf` and `Session.deleteIf`:
 * - `ifMatch`: the key holds a value whose version is one of these, or any value (`"*"`);
 * - `ifAbsent`: the key holds no value (nothing, or a tombstone); not for a delete.
 */
export type WriteIf = { readonly ifMatch: "*" | readonly string[] } | { readonly ifAbsent: true };

/**
 * The timestamp of the newest reply for exactly `key` (the consolidated one when several
 * storages hold it): the key's version as a read sees it. None for a wildcard expression, or
 * replies without a timestamp (evals, the admin space).
 */
export function newestTimestamp(key: string, replies: readonly Reply[]): Timestamp | undefined {
  if (isWild(key)) return undefined;
  let newest: Timestamp | undefined;
  for (const r of replies) {
    if (r.kind !== "ok" || r.sample.key !== key) continue;
    const ts = r.sample.timestamp;
    if (ts && (newest === undefined || ts.compare(newest) > 0)) newest = ts;
  }
  return newest;
}

/**
 * Checks `condition` on a write of `key` (`deleting`: a delete) and returns the one condition
 * the storages check with the write, or undefined when the version must be read first (`*`,
 * several versions: `writeOnRead`). Throws `bad_input` for a malformed condition.
 */
export function storageCondition(key: string, condition: WriteIf, deleting: boolean): WriteCondition | undefined {
  if (isWild(key))
    throw ZestError.badRequest(`a conditional write names one key, not a key expression with wildcards (${key})`);
  if (!("ifMatch" in condition)) {
    if (condition.ifAbsent !== true) throw ZestError.badRequest("a write condition is ifMatch or ifAbsent: true");
    if (deleting) throw ZestError.badRequest("ifAbsent applies to a put, not a delete");
    return IF_ABSENT;
  }
  const versions = condition.ifMatch;
  if (versions === "*") return undefined;
  if (!Array.isArray(versions) || versions.length === 0 || versions.length > MAX_MATCH_VERSIONS)
    throw ZestError.badRequest(`ifMatch takes "*" or 1 to ${MAX_MATCH_VERSIONS} versions`);
  for (const v of versions)
    if (typeof v !== "string" || v.length === 0 || v.length > MAX_VERSION_LENGTH)
      throw ZestError.badRequest(`a version in ifMatch must be 1 to ${MAX_VERSION_LENGTH} characters`);
  return versions.length === 1 ? { ifVersion: versions[0]! } : undefined;
}

const IF_ABSENT: WriteCondition = Object.freeze({ ifAbsent: true });

/**
 * `ifMatch` with `*` or several versions: reads the key's version (`read`: the replies of a
 * get of `key`), checks it, then writes on it (`write`, with `ifVersion` and a fresh timestamp,
 * which it resolves with). A writer that got in between the read and the write makes it read
 * again, `MATCH_TRIES` times in all; then the `precondition_failed` stands.
 */
export async function writeOnRead(
  key: string,
  versions: "*" | readonly string[],
  read: () => Promise<Reply[]>,
  write: (condition: WriteCondition) => Timestamp | Promise<Timestamp>,
): Promise<Timestamp> {
  for (let attempt = 1; ; attempt++) {
    const current = newestTimestamp(key, await read())?.encode();
    if (current === undefined)
      throw new ZestError("precondition_failed", `write condition failed: it needs a value, and ${key} holds nothing`);
    if (versions !== "*" && !versions.includes(current))
      throw new ZestError("precondition_failed", "write condition failed: the key holds another version");
    try {
      return await write({ ifVersion: current });
    } catch (err) {
      // A writer got in between the read and the write: read again.
      if (attempt >= MATCH_TRIES || toZestError(err).kind !== "precondition_failed") throw err;
    }
  }
}
