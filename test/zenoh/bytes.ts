/** Bytes as the codec tests write and compare them: hex both ways, and a message encoded alone. */
import { Buffer } from "node:buffer";
import { BinaryWriter } from "../../src/core/binary.js";

/** `b` as lowercase hex. */
export const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

/** The bytes of hex `h` (white space ignored). */
export const bytes = (h: string): Buffer => Buffer.from(h.replace(/\s+/g, ""), "hex");

/** What `f` writes into a fresh writer. */
export function write(f: (w: BinaryWriter) => void): Buffer {
  const w = new BinaryWriter(8);
  f(w);
  return w.finish();
}
