/**
 * zenoh's timestamp stack (network extension 0x7 of PUSH, REQUEST and RESPONSE, zenoh 1.10): the
 * interception points a message was instrumented for, and one record per point passed, each a
 * point and a timestamp. A router that passes a message instrumented for ROUTE adds its own record
 * (docs/zenoh-protocol.md, "Extensions carried"); everything else in the stack is carried as it came.
 *
 * Body: conf flags (u8, the points instrumented), the record count (VLE, at most 255), then each
 * record: its flags (u8: the point, bit 7 for a custom timestamp) and its timestamp as bytes (VLE
 * length, then a zenoh timestamp: NTP64 time as VLE, the ZenohId with its length).
 */
import type { Buffer } from "node:buffer";
import { BinaryReader, BinaryWriter } from "../../core/binary.js";
import type { Timestamp } from "../../core/timestamp.js";
import { EXT_FULL_ID, writeTimestamp } from "./core.js";

/** The extension's header byte, as carried (`rawExt`: no chain bit). */
const TS_STACK_HEADER = 0x07 | 0x40;
/** The ROUTE interception point. */
const ROUTE = 0x02;
/** zenoh refuses a stack of more records. */
const MAX_RECORDS = 255;

/**
 * The carried network extensions with this router's ROUTE record added to a timestamp stack
 * instrumented for it, stamped by `stamp`; `exts` itself when there is none (the usual case) or
 * the stack is full or malformed (carried as it came, as zenohd would not add to it either).
 */
export function withRouteRecord(
  exts: readonly Buffer[] | undefined,
  stamp: () => Timestamp,
): readonly Buffer[] | undefined {
  if (exts === undefined) return undefined;
  const at = exts.findIndex((e) => ((e[0] as number) & EXT_FULL_ID) === TS_STACK_HEADER);
  if (at === -1) return exts;
  const routed = addRoute(exts[at] as Buffer, stamp);
  if (routed === undefined) return exts;
  const out = exts.slice();
  out[at] = routed;
  return out;
}

function addRoute(ext: Buffer, stamp: () => Timestamp): Buffer | undefined {
  try {
    const r = new BinaryReader(ext, 1);
    const len = r.vle(ext.length);
    const end = r.pos + len;
    if (end !== ext.length) return undefined;
    const conf = r.u8();
    if ((conf & ROUTE) === 0) return undefined;
    const count = r.vle(MAX_RECORDS);
    if (count >= MAX_RECORDS) return undefined;
    const records = ext.subarray(r.pos, end);
    const ts = new BinaryWriter(32);
    writeTimestamp(ts, stamp());
    const tsBytes = ts.finish();
    const body = new BinaryWriter(records.length + tsBytes.length + 16);
    body
      .u8(conf)
      .vle(count + 1)
      .bytes(records)
      .u8(ROUTE)
      .vle(tsBytes.length)
      .bytes(tsBytes);
    const bodyBytes = body.finish();
    return new BinaryWriter(bodyBytes.length + 8)
      .u8(ext[0] as number)
      .vle(bodyBytes.length)
      .bytes(bodyBytes)
      .finish();
  } catch {
    return undefined;
  }
}
