/**
 * zenoh's user/password authentication, answered in the INIT/OPEN handshake as zenohd answers it
 * (docs/zenoh-protocol.md, "Credentials"). The handshake's auth extension (id 0x03, a zbuf)
 * holds a chain of sub-extensions; user/password is sub-extension 2:
 *
 * - INIT syn: a unit: the client has credentials;
 * - INIT ack: a z64, the router's random nonce (kept in the stateless cookie);
 * - OPEN syn: a zbuf holding `user` and `hmac` (each length-prefixed), where `hmac` is
 *   HMAC-SHA256 keyed by the nonce's 8 little-endian bytes over the password;
 * - OPEN ack: a unit.
 *
 * The router must hold each password in clear to check the HMAC, so the users come from
 * zenohd's `transport.auth.usrpwd.dictionary_file` (`user:password` lines), not from the scrypt
 * hashes of `access_control.users`; the names are the same user names the access-control
 * subjects list (`usernames`).
 */
import { Buffer } from "node:buffer";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { BinaryReader, BinaryWriter, DecodeError } from "../core/binary.js";
import { EXT_ENC_MASK, EXT_MORE, EXT_UNIT, EXT_ZBUF, EXT_ZINT, readExt } from "./codec/core.js";
import { BoundedCache } from "../access/bounded-cache.js";

/** The user/password sub-extension's id inside the auth extension. */
const USRPWD = 0x02;
/** Longest dictionary file read (bytes). */
export const MAX_DICTIONARY_BYTES = 1 << 20;
/** Most users a dictionary may list. */
export const MAX_DICTIONARY_USERS = 10_000;
/** Longest user name (bytes), as `access_control.users[].name`. */
export const MAX_USER_BYTES = 256;
/** Longest password (bytes). */
export const MAX_PASSWORD_BYTES = 1024;
/** Sub-extensions read from one auth extension (zenoh defines two). */
const MAX_SUB_EXTENSIONS = 8;
/** Failed logins per address per window before the router stops checking. */
const FAILURES_PER_WINDOW = 20;
const FAILURE_WINDOW_MS = 60_000;
const ADDRESSES_TRACKED = 10_000;

/** The outcome of checking an OPEN syn's credentials. */
export type UsrPwdOutcome = { readonly user: string } | { readonly refused: string };

/**
 * Reads a dictionary in zenohd's format: one `user:password` per line, both trimmed, blank lines
 * skipped. Throws an Error naming the line (never the password) for a malformed one.
 */
export function parseDictionary(text: string, where: string): Map<string, Buffer> {
  const users = new Map<string, Buffer>();
  const lines = text.split("\n");
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === "") continue;
    const colon = line.indexOf(":");
    const at = `${where} line ${i + 1}`;
    if (colon === -1) throw new Error(`${at}: expected user:password`);
    const user = line.slice(0, colon).trim();
    const password = Buffer.from(line.slice(colon + 1).trim(), "utf8");
    if (user === "") throw new Error(`${at}: empty user name`);
    if (password.length === 0) throw new Error(`${at}: empty password`);
    if (Buffer.byteLength(user) > MAX_USER_BYTES)
      throw new Error(`${at}: user name longer than ${MAX_USER_BYTES} bytes`);
    if (password.length > MAX_PASSWORD_BYTES)
      throw new Error(`${at}: password longer than ${MAX_PASSWORD_BYTES} bytes`);
    if (users.has(user)) throw new Error(`${at}: user "${user}" is listed twice`);
    if (users.size >= MAX_DICTIONARY_USERS) throw new Error(`${where}: more than ${MAX_DICTIONARY_USERS} users`);
    users.set(user, password);
  }
  return users;
}

/** The router's side of user/password authentication. */
export class UsrPwdAuth {
  readonly #users: ReadonlyMap<string, Buffer>;
  readonly #failures = new BoundedCache<string, { count: number; since: number }>(ADDRESSES_TRACKED);

  constructor(users: ReadonlyMap<string, Buffer>) {
    this.#users = users;
  }

  /** Reads `dictionary_file` (zenohd's format); throws an Error with a one-line reason. */
  static fromFile(path: string): UsrPwdAuth {
    const where = `transport.auth.usrpwd.dictionary_file ${path}`;
    let text: string;
    try {
      if (statSync(path).size > MAX_DICTIONARY_BYTES) throw new Error(`larger than ${MAX_DICTIONARY_BYTES} bytes`);
      text = readFileSync(path, "utf8");
    } catch (err) {
      throw new Error(`${where}: ${(err as Error).message}`);
    }
    const users = parseDictionary(text, where);
    if (users.size === 0) throw new Error(`${where}: lists no user`);
    return new UsrPwdAuth(users);
  }

  /** How many users the dictionary lists. */
  get size(): number {
    return this.#users.size;
  }

  /** True when an INIT syn's auth extension says the client has credentials. */
  asked(auth: Buffer | undefined): boolean {
    return auth !== undefined && findSub(auth) !== undefined;
  }

  /** A fresh nonce for an INIT ack. */
  nonce(): bigint {
    return randomBytes(8).readBigUInt64LE(0);
  }

  /** The INIT ack's auth extension body: the nonce. */
  initAck(nonce: bigint): Buffer {
    const w = new BinaryWriter(16);
    w.u8(USRPWD | EXT_ZINT).vle64(nonce);
    return Buffer.from(w.view());
  }

  /** The OPEN ack's auth extension body: the unit that says the credentials were accepted. */
  openAck(): Buffer {
    return Buffer.of(USRPWD | EXT_UNIT);
  }

  /**
   * Checks an OPEN syn's auth extension against `nonce` (from the cookie). A wrong user and a
   * wrong password are told apart only in the log line the caller writes, not on the wire; an
   * address with 20 failures within a minute is refused without a check until the minute is over.
   */
  verify(auth: Buffer | undefined, nonce: bigint, address: string, now = Date.now()): UsrPwdOutcome {
    const f = this.#failures.get(address);
    if (f !== undefined && f.count >= FAILURES_PER_WINDOW && now - f.since < FAILURE_WINDOW_MS)
      return { refused: `too many failed logins from ${address}: retry in a minute` };
    const outcome = this.#check(auth, nonce);
    if ("refused" in outcome) {
      if (f === undefined || now - f.since >= FAILURE_WINDOW_MS) this.#failures.set(address, { count: 1, since: now });
      else f.count++;
    }
    return outcome;
  }

  #check(auth: Buffer | undefined, nonce: bigint): UsrPwdOutcome {
    const body = auth === undefined ? undefined : findSub(auth);
    if (body === undefined || body.kind !== EXT_ZBUF) return { refused: "no credentials in the OPEN" };
    let user: string;
    let mac: Buffer;
    try {
      const r = new BinaryReader(body.value);
      const userBytes = r.lenBytes(MAX_USER_BYTES);
      mac = r.lenBytes(64);
      user = userBytes.toString("utf8");
    } catch {
      return { refused: "malformed credentials" };
    }
    const password = this.#users.get(user);
    const key = Buffer.alloc(8);
    key.writeBigUInt64LE(nonce);
    // An unknown user costs the same HMAC as a known one.
    const expected = createHmac("sha256", key)
      .update(password ?? Buffer.alloc(0))
      .digest();
    const same = mac.length === expected.length && timingSafeEqual(mac, expected);
    if (password === undefined) return { refused: `unknown user "${user.slice(0, 64)}"` };
    return same ? { user } : { refused: `wrong password for user "${user.slice(0, 64)}"` };
  }
}

/** The user/password sub-extension of an auth extension body: its encoding and its value. */
function findSub(auth: Buffer): { kind: number; value: Buffer } | undefined {
  const r = new BinaryReader(auth);
  let more = !r.done;
  for (let n = 0; more; n++) {
    if (n >= MAX_SUB_EXTENSIONS) throw new DecodeError("too many auth sub-extensions");
    const h = r.peekU8();
    if ((h & 0x0f) === USRPWD && (h & EXT_ENC_MASK) === EXT_ZINT) {
      // A z64 nonce may use all 64 bits: read it exactly (readExt keeps 53).
      r.u8();
      const w = new BinaryWriter(10);
      w.vle64(r.vle64());
      return { kind: EXT_ZINT, value: Buffer.from(w.view()) };
    }
    const ext = readExt(r, MAX_USER_BYTES + 128);
    more = ext.more;
    if ((ext.id & 0x0f) === USRPWD) return { kind: ext.id & EXT_ENC_MASK, value: ext.zbuf };
  }
  return undefined;
}

/**
 * The client's side, for tests and the bench client: the INIT syn's extension body, and the OPEN
 * syn's body for `user`/`password` given the INIT ack's auth extension (undefined when the ack
 * carries no nonce: the router does not take credentials).
 */
export const usrPwdClient = {
  initSyn(): Buffer {
    return Buffer.of(USRPWD | EXT_UNIT);
  },
  openSyn(ackAuth: Buffer | undefined, user: string, password: string): Buffer | undefined {
    if (ackAuth === undefined) return undefined;
    const r = new BinaryReader(ackAuth);
    let nonce: bigint | undefined;
    while (!r.done) {
      const h = r.u8();
      if ((h & 0x0f) === USRPWD && (h & EXT_ENC_MASK) === EXT_ZINT) {
        nonce = r.vle64();
        break;
      }
      if ((h & EXT_ENC_MASK) === EXT_ZINT) r.vle64();
      else if ((h & EXT_ENC_MASK) === EXT_ZBUF) r.lenBytes();
      if ((h & EXT_MORE) === 0) break;
    }
    if (nonce === undefined) return undefined;
    const key = Buffer.alloc(8);
    key.writeBigUInt64LE(nonce);
    const mac = createHmac("sha256", key).update(password, "utf8").digest();
    const inner = new BinaryWriter(64);
    inner.lenString(user).lenBytes(mac);
    const w = new BinaryWriter(80);
    w.u8(USRPWD | EXT_ZBUF).lenBytes(inner.view());
    return Buffer.from(w.view());
  },
};
