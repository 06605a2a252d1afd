/**
 * Keys ↔ NATS subjects, reversibly.
 *
 * A key `a/b/c` travels on `zest.k.a.b.c`: each chunk is one subject token, `/` is the token
 * separator. NATS gives `.` meaning (separator), treats `*` and `>` as wildcards, and forbids
 * whitespace, so every byte a token cannot hold verbatim is written `~XX` (uppercase hex of the
 * UTF-8 byte): `.`, `*`, `>`, `~` itself, controls, space, DEL and everything non-ASCII. The
 * empty chunk (never valid in a key, but the mapping stays total) is the lone token `~`, which
 * no escape produces. Decoding is the exact inverse; a malformed token throws.
 *
 * A key expression with wildcards maps to the NATS subjects that cover it (a superset): `*` and
 * a chunk holding `$*` become `*`, and from the first `**` on everything is `>`. NATS `>` needs
 * at least one token, so a trailing `**` (which also matches zero chunks) adds the parent subject
 * as well. Receivers refine with `intersects`, so over-covering is harmless. A covering longer
 * than `MAX_SUBJECT_LENGTH` is cut short with `>`.
 */
import { tokenEscaper } from "../core/token-escape.js";
import { isVerbatimChunk } from "../keyexpr/index.js";

/** Subject prefix of samples (data). */
export const DATA_PREFIX = "zest.k";

/**
 * Longest subject zest publishes or subscribes to. A NATS protocol line (`PUB <subject> <reply>
 * <size>`) is limited to 4 KiB by default and a longer one closes the connection, so longer keys
 * travel on the routers' own subjects instead, and longer coverings are cut short with `>`.
 */
export const MAX_SUBJECT_LENGTH = 3_000;

/** True for a byte a token may hold verbatim: printable ASCII except `.`, `*`, `>` and `~`. */
function plain(c: number): boolean {
  return c >= 0x21 && c <= 0x7d && c !== 0x2e && c !== 0x2a && c !== 0x3e;
}

/** Every char plain, `/` included: the whole key is mapped by replacing `/` (the hot path). */
const PLAIN_KEY = /^[!-)+-\-/-=?-}]+$/;

const SUBJECT_TOKEN = tokenEscaper("~", plain, "subject token");

/** One key chunk as one subject token. */
export const encodeToken: (chunk: string) => string = SUBJECT_TOKEN.encode;

/** Inverse of `encodeToken`; throws on a token it cannot have produced. */
export const decodeToken: (token: string) => string = SUBJECT_TOKEN.decode;

/** The subject a sample on `key` is published on. */
export function keyToSubject(key: string, prefix = DATA_PREFIX): string {
  if (PLAIN_KEY.test(key) && !key.startsWith("/") && !key.endsWith("/") && !key.includes("//")) {
    return `${prefix}.${key.replaceAll("/", ".")}`;
  }
  return `${prefix}.${key.split("/").map(encodeToken).join(".")}`;
}

/** The key a subject made by `keyToSubject` stands for. Throws on a foreign or malformed subject. */
export function subjectToKey(subject: string, prefix = DATA_PREFIX): string {
  if (!subject.startsWith(`${prefix}.`)) throw new Error(`subject "${subject}" is not under "${prefix}"`);
  const rest = subject.slice(prefix.length + 1);
  if (!rest.includes("~")) return rest.replaceAll(".", "/");
  return rest.split(".").map(decodeToken).join("/");
}

/**
 * NATS subjects whose union covers every key matched by the canonical key expression `keyExpr`
 * (a superset: refine with `intersects`).
 */
export function coveringSubjects(keyExpr: string, prefix = DATA_PREFIX): string[] {
  const chunks = keyExpr.split("/");
  const tokens: string[] = [];
  let length = prefix.length;
  for (let i = 0; i < chunks.length; i++) {
    const c = chunks[i]!;
    const token = c === "**" || c === "*" || (!isVerbatimChunk(c) && c.includes("$*")) ? "*" : encodeToken(c);
    length += 1 + token.length;
    if (length > MAX_SUBJECT_LENGTH - 2) {
      // Too long for NATS: cover everything under the part that fits.
      return [tokens.length === 0 ? `${prefix}.>` : `${prefix}.${tokens.join(".")}.>`];
    }
    if (c === "**") {
      const base = tokens.length === 0 ? prefix : `${prefix}.${tokens.join(".")}`;
      // `>` needs one more token; a trailing `**` also matches nothing more, i.e. the parent key.
      return i === chunks.length - 1 && tokens.length > 0 ? [`${base}.>`, base] : [`${base}.>`];
    }
    tokens.push(token);
  }
  return [`${prefix}.${tokens.join(".")}`];
}

/** True when every subject matched by NATS subject `b` is matched by `a` (wildcards on both sides). */
export function subjectIncludes(a: string, b: string): boolean {
  const ta = a.split(".");
  const tb = b.split(".");
  for (let i = 0; i < ta.length; i++) {
    const x = ta[i]!;
    if (x === ">") return tb.length > i;
    const y = tb[i];
    if (y === undefined || y === ">") return false;
    if (x === "*") continue;
    if (y === "*" || x !== y) return false;
  }
  return ta.length === tb.length;
}

/** True when some subject matches both NATS subjects `a` and `b`. */
export function subjectsIntersect(a: string, b: string): boolean {
  const ta = a.split(".");
  const tb = b.split(".");
  for (let i = 0; ; i++) {
    const x = ta[i];
    const y = tb[i];
    if (x === ">" || y === ">") return x !== undefined && y !== undefined;
    if (x === undefined || y === undefined) return x === y;
    if (x !== "*" && y !== "*" && x !== y) return false;
  }
}

/**
 * The smallest set of subscriptions covering every key expression in `keyExprs`: duplicates and
 * subjects included in another are dropped. The result is sorted (stable diffs between calls).
 */
export function coverAll(keyExprs: Iterable<string>, prefix = DATA_PREFIX): string[] {
  const all = new Set<string>();
  for (const ke of keyExprs) for (const s of coveringSubjects(ke, prefix)) all.add(s);
  const list = [...all];
  return list.filter((s) => !list.some((t) => t !== s && subjectIncludes(t, s))).sort();
}

/** Samples on a wildcard (or very long) key, sent to one router: `zest.w.<zid>`. */
export const DIRECT_SUBJECT = "zest.w";
/** A router's declarations, heartbeats and goodbye: `zest.d.<zid>`. */
export const DECL_SUBJECT = "zest.d";
/** A joining (or reconnected) router's declarations; every router answers with its own. */
export const HELLO_SUBJECT = "zest.hello";
/** Queries, pings and requests for declarations to one router: `zest.q.<zid>`. */
export const QUERY_SUBJECT = "zest.q";
