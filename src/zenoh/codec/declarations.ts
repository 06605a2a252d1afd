/**
 * DECLARE's sub-declarations (docs/zenoh-protocol.md): key-expression ids, subscribers,
 * queryables, liveliness tokens, their undeclarations, and D_FINAL (the end of the current
 * declarations answering an INTEREST).
 */
import { Buffer } from "node:buffer";
import {
  type BinaryReader,
  BinaryReader as Reader,
  type BinaryWriter,
  DecodeError,
  vleLength,
} from "../../core/binary.js";
import {
  EXT_MANDATORY,
  EXT_ZBUF,
  EXT_ZINT,
  extHeader,
  FLAG_Z,
  MAX_SUFFIX_BYTES,
  MID_MASK,
  readExt,
  readWireExpr,
  unknownExt,
  type WireExpr,
  writeWireExpr,
} from "./core.js";

export const D_KEYEXPR = 0x00;
export const U_KEYEXPR = 0x01;
export const D_SUBSCRIBER = 0x02;
export const U_SUBSCRIBER = 0x03;
export const D_QUERYABLE = 0x04;
export const U_QUERYABLE = 0x05;
export const D_TOKEN = 0x06;
export const U_TOKEN = 0x07;
export const D_FINAL = 0x1a;

const FLAG_N = 0x20;
const FLAG_M = 0x40;
const EXT_QUERYABLE_INFO = 0x01 | EXT_ZINT;
/** An undeclaration's key expression (for receivers that did not keep the id). */
const EXT_WIRE_EXPR = 0x0f | EXT_ZBUF | EXT_MANDATORY;

export type Declaration =
  | { kind: "keyexpr"; id: number; key: WireExpr }
  | { kind: "unkeyexpr"; id: number }
  | { kind: "subscriber"; id: number; key: WireExpr }
  | { kind: "unsubscriber"; id: number; key?: WireExpr }
  | { kind: "queryable"; id: number; key: WireExpr; complete: boolean; distance: number }
  | { kind: "unqueryable"; id: number; key?: WireExpr }
  | { kind: "token"; id: number; key: WireExpr }
  | { kind: "untoken"; id: number; key?: WireExpr }
  | { kind: "final" };

function undeclKey(r: BinaryReader, h: number): WireExpr | undefined {
  if ((h & FLAG_Z) === 0) return undefined;
  let key: WireExpr | undefined;
  let more = true;
  while (more) {
    const ext = readExt(r);
    more = ext.more;
    if (ext.id === EXT_WIRE_EXPR) {
      const er = new Reader(ext.zbuf);
      const flags = er.u8();
      const scope = er.vle(0xffff_ffff);
      const suffix = (flags & 0x01) !== 0 ? er.string(Math.min(er.remaining, MAX_SUFFIX_BYTES)) : "";
      key = { scope, suffix, senderMapping: (flags & 0x02) !== 0 };
    } else unknownExt(ext);
  }
  return key;
}

function skipExts(r: BinaryReader, h: number): void {
  if ((h & FLAG_Z) === 0) return;
  let more = true;
  while (more) {
    const ext = readExt(r);
    more = ext.more;
    unknownExt(ext);
  }
}

/** Decodes the declaration at the reader's position. */
export function decodeDeclaration(r: BinaryReader): Declaration {
  const h = r.u8();
  switch (h & MID_MASK) {
    case D_KEYEXPR: {
      const id = r.vle(0xffff_ffff);
      const key = readWireExpr(r, (h & FLAG_N) !== 0, true);
      skipExts(r, h);
      return { kind: "keyexpr", id, key };
    }
    case U_KEYEXPR: {
      const id = r.vle(0xffff_ffff);
      skipExts(r, h);
      return { kind: "unkeyexpr", id };
    }
    case D_SUBSCRIBER:
    case D_TOKEN: {
      const id = r.vle(0xffff_ffff);
      const key = readWireExpr(r, (h & FLAG_N) !== 0, (h & FLAG_M) !== 0);
      skipExts(r, h);
      return { kind: (h & MID_MASK) === D_TOKEN ? "token" : "subscriber", id, key };
    }
    case D_QUERYABLE: {
      const id = r.vle(0xffff_ffff);
      const key = readWireExpr(r, (h & FLAG_N) !== 0, (h & FLAG_M) !== 0);
      let complete = false;
      let distance = 0;
      if ((h & FLAG_Z) !== 0) {
        let more = true;
        while (more) {
          const ext = readExt(r);
          more = ext.more;
          if (ext.id === EXT_QUERYABLE_INFO) {
            complete = (ext.zint & 0x01) !== 0;
            distance = Math.floor(ext.zint / 256) & 0xffff;
          } else unknownExt(ext);
        }
      }
      return { kind: "queryable", id, key, complete, distance };
    }
    case U_SUBSCRIBER:
    case U_QUERYABLE:
    case U_TOKEN: {
      const id = r.vle(0xffff_ffff);
      const key = undeclKey(r, h);
      const mid = h & MID_MASK;
      const kind = mid === U_SUBSCRIBER ? "unsubscriber" : mid === U_QUERYABLE ? "unqueryable" : "untoken";
      return key === undefined ? { kind, id } : { kind, id, key };
    }
    case D_FINAL:
      skipExts(r, h);
      return { kind: "final" };
    default:
      throw new DecodeError(`unknown declaration 0x${(h & MID_MASK).toString(16)}`);
  }
}

function commonHeader(mid: number, key: WireExpr, ext: boolean): number {
  return mid | (key.suffix !== "" ? FLAG_N : 0) | (key.senderMapping ? FLAG_M : 0) | (ext ? FLAG_Z : 0);
}

/** Writes a declaration. Undeclarations carry their key expression when it is given. */
export function encodeDeclaration(w: BinaryWriter, d: Declaration): void {
  switch (d.kind) {
    case "keyexpr":
      w.u8(D_KEYEXPR | (d.key.suffix !== "" ? FLAG_N : 0)).vle(d.id);
      writeWireExpr(w, d.key);
      return;
    case "unkeyexpr":
      w.u8(U_KEYEXPR).vle(d.id);
      return;
    case "subscriber":
    case "token":
      w.u8(commonHeader(d.kind === "token" ? D_TOKEN : D_SUBSCRIBER, d.key, false)).vle(d.id);
      writeWireExpr(w, d.key);
      return;
    case "queryable": {
      const info = d.complete || d.distance !== 0;
      w.u8(commonHeader(D_QUERYABLE, d.key, info)).vle(d.id);
      writeWireExpr(w, d.key);
      if (info) {
        extHeader(w, EXT_QUERYABLE_INFO, false);
        w.vle((d.complete ? 1 : 0) + d.distance * 256);
      }
      return;
    }
    case "unsubscriber":
    case "unqueryable":
    case "untoken": {
      const mid = d.kind === "unsubscriber" ? U_SUBSCRIBER : d.kind === "unqueryable" ? U_QUERYABLE : U_TOKEN;
      w.u8(mid | (d.key ? FLAG_Z : 0)).vle(d.id);
      if (d.key) {
        extHeader(w, EXT_WIRE_EXPR, false);
        const suffix = Buffer.from(d.key.suffix, "utf8");
        const scopeLen = vleLength(d.key.scope);
        w.vle(1 + scopeLen + suffix.length);
        w.u8((suffix.length > 0 ? 0x01 : 0) | (d.key.senderMapping ? 0x02 : 0))
          .vle(d.key.scope)
          .bytes(suffix);
      }
      return;
    }
    case "final":
      w.u8(D_FINAL);
      return;
  }
}
