/**
 * A key as one receiver reads it in a PUSH (docs/zenoh-protocol.md, "Key expressions on the way
 * out"): named in full (scope 0), or as one of the key-expression ids the receiver declared
 * itself, with the rest of the key as the suffix, as zenoh's router names it (`get_best_key`).
 * Each is made once and kept, so a PUSH writes its bytes with one copy and the encoder can tell
 * two of them apart by identity.
 */
import type { Buffer } from "node:buffer";
import { BinaryWriter } from "../../core/binary.js";
import { type WireExpr, writeWireExpr } from "./core.js";

/** A network message's N flag: a suffix follows the scope. */
const FLAG_N = 0x20;

/** A key as one receiver reads it. */
export interface WireKey {
  /** The N flag (a suffix follows) of the message header; the M flag is clear: scope 0 or the receiver's own id. */
  readonly flags: number;
  /** The wire expression's bytes: its scope, then its suffix when it has one. */
  readonly bytes: Buffer;
  /** The same as a wire expression, for the generic encoders. */
  readonly expr: WireExpr;
}

/** Entries kept in each cache below: enough for the keys a router sends again and again. */
const CACHE_MAX = 4096;
/** Longer keys are not kept (written anew each time). */
export const LONGEST_CACHED_KEY = 256;

const named = new Map<string, WireKey>();
/** The key asked for last: a subscriber's PUSHes mostly repeat the key before them. */
let lastNamed: WireKey | undefined;

const mapped = new Map<string, WireKey>();

function make(scope: number, suffix: string): WireKey {
  const expr: WireExpr = { scope, suffix, senderMapping: false };
  const w = new BinaryWriter(6 + suffix.length * 3);
  writeWireExpr(w, expr);
  return { flags: suffix === "" ? 0 : FLAG_N, bytes: w.finish(), expr };
}

function kept(cache: Map<string, WireKey>, id: string, scope: number, suffix: string): WireKey {
  let k = cache.get(id);
  if (k === undefined) {
    k = make(scope, suffix);
    // Bounded: a stream of distinct keys must not grow it without end.
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(id, k);
  }
  return k;
}

/** `key` named in full (scope 0); kept when at most `LONGEST_CACHED_KEY` long. */
export function namedWireKey(key: string): WireKey {
  const last = lastNamed;
  if (last !== undefined && last.expr.suffix === key) return last;
  const k = key.length > LONGEST_CACHED_KEY ? make(0, key) : kept(named, key, 0, key);
  lastNamed = k;
  return k;
}

/** The receiver's own key-expression id `scope` with `suffix` after it; kept when the suffix is at most `LONGEST_CACHED_KEY` long. */
export function mappedWireKey(scope: number, suffix: string): WireKey {
  return suffix.length > LONGEST_CACHED_KEY ? make(scope, suffix) : kept(mapped, `${scope}/${suffix}`, scope, suffix);
}
