/**
 * Reversible escaping of one key chunk into a token of a narrower alphabet (a NATS subject
 * token, a JetStream KV key token). Every UTF-8 byte the token cannot hold verbatim is written
 * as the escape character and two uppercase hex digits; the empty chunk is the lone escape
 * character, which no escape produces. Decoding is the exact inverse and throws on a token the
 * encoder cannot have produced.
 */
import { Buffer } from "node:buffer";

const HEX = "0123456789ABCDEF";

/** The two directions of one token alphabet. */
export interface TokenEscaper {
  encode(chunk: string): string;
  /** Throws `Error("malformed <what> ...")` on a token `encode` cannot have produced. */
  decode(token: string): string;
}

/**
 * An escaper for the alphabet whose verbatim bytes satisfy `plain` (which must be false for the
 * escape character itself). `what` names the token in error messages.
 */
export function tokenEscaper(escapeChar: string, plain: (byte: number) => boolean, what: string): TokenEscaper {
  const escapeCode = escapeChar.charCodeAt(0);
  const encode = (chunk: string): string => {
    if (chunk.length === 0) return escapeChar;
    let simple = true;
    for (let i = 0; i < chunk.length; i++) {
      if (!plain(chunk.charCodeAt(i))) {
        simple = false;
        break;
      }
    }
    if (simple) return chunk;
    let out = "";
    for (const byte of Buffer.from(chunk, "utf8")) {
      out += plain(byte) ? String.fromCharCode(byte) : `${escapeChar}${HEX[byte >> 4]}${HEX[byte & 15]}`;
    }
    return out;
  };
  const decode = (token: string): string => {
    if (token === escapeChar) return "";
    if (!token.includes(escapeChar)) return token;
    const bytes: number[] = [];
    for (let i = 0; i < token.length; i++) {
      const c = token.charCodeAt(i);
      if (c !== escapeCode) {
        bytes.push(c);
        continue;
      }
      const hi = i + 2 < token.length ? HEX.indexOf(token[i + 1]!) : -1;
      const lo = i + 2 < token.length ? HEX.indexOf(token[i + 2]!) : -1;
      if (hi < 0 || lo < 0)
        throw new Error(`malformed ${what} "${token}": "${escapeChar}" must be followed by two uppercase hex digits`);
      bytes.push(hi * 16 + lo);
      i += 2;
    }
    const text = Buffer.from(bytes).toString("utf8");
    // A stray byte sequence that is not UTF-8 would decode to U+FFFD and not round-trip.
    if (encode(text) !== token) throw new Error(`malformed ${what} "${token}"`);
    return text;
  };
  return { encode, decode };
}
