/**
 * Salted scrypt hashes of passwords and tokens, in the PHC string format
 * `$scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt base64>$<hash base64>`. The config holds only these.
 */
import { Buffer } from "node:buffer";
import { randomBytes, scrypt, scryptSync, timingSafeEqual } from "node:crypto";

/** Default cost: N = 2^14, r = 8 (16 MiB, tens of milliseconds per check). */
const DEFAULT_LN = 14;
const DEFAULT_R = 8;
const DEFAULT_P = 1;
const KEY_LEN = 32;
/** Costs a config may ask for, so a hash in the config cannot make one check take minutes. */
const MAX_LN = 20;
const MAX_R = 32;
const MAX_P = 4;

/** A parsed hash. */
export interface ScryptHash {
  readonly ln: number;
  readonly r: number;
  readonly p: number;
  readonly salt: Buffer;
  readonly hash: Buffer;
}

const PHC = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d)\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

/** Parses a hash string; throws an Error with a one-line reason when it is not one. */
export function parseHash(s: string): ScryptHash {
  const m = PHC.exec(s);
  if (!m)
    throw new Error("not a zest password hash (expected $scrypt$ln=..,r=..,p=..$salt$hash, as `zest passwd` prints)");
  const ln = Number(m[1]);
  const r = Number(m[2]);
  const p = Number(m[3]);
  if (ln < 1 || ln > MAX_LN || r < 1 || r > MAX_R || p < 1 || p > MAX_P)
    throw new Error(`scrypt cost out of range (ln 1..${MAX_LN}, r 1..${MAX_R}, p 1..${MAX_P})`);
  const salt = Buffer.from(m[4]!, "base64");
  const hash = Buffer.from(m[5]!, "base64");
  if (salt.length < 8 || hash.length < 16) throw new Error("salt or hash too short");
  return { ln, r, p, salt, hash };
}

function maxmem(h: { ln: number; r: number; p: number }): number {
  return 256 * (1 << h.ln) * h.r * h.p + 1024 * 1024;
}

/** Hashes a secret with a fresh random salt (synchronous: `zest passwd`, tests). */
export function hashSecret(secret: string, cost: { ln?: number } = {}): string {
  const ln = cost.ln ?? DEFAULT_LN;
  const salt = randomBytes(16);
  const hash = scryptSync(secret, salt, KEY_LEN, {
    N: 1 << ln,
    r: DEFAULT_R,
    p: DEFAULT_P,
    maxmem: maxmem({ ln, r: DEFAULT_R, p: DEFAULT_P }),
  });
  return `$scrypt$ln=${ln},r=${DEFAULT_R},p=${DEFAULT_P}$${salt.toString("base64")}$${hash.toString("base64")}`;
}

/** True when `secret` matches `h`; runs on the libuv thread pool, compares in constant time. */
export function verifySecret(secret: string, h: ScryptHash): Promise<boolean> {
  return new Promise((resolve) => {
    scrypt(secret, h.salt, h.hash.length, { N: 1 << h.ln, r: h.r, p: h.p, maxmem: maxmem(h) }, (err, derived) => {
      resolve(err === null && derived.length === h.hash.length && timingSafeEqual(derived, h.hash));
    });
  });
}
