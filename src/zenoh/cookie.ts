/**
 * The INIT/OPEN cookie (docs/zenoh-protocol.md): the parameters the router agreed in its INIT
 * ack, sealed with an HMAC under a per-process secret, so that the OPEN syn that carries it back
 * can be checked without the router keeping any state between the two messages.
 */
import { Buffer } from "node:buffer";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { BinaryReader, BinaryWriter, DecodeError } from "../core/binary.js";
import { type WhatAmI, whatAmICode, whatAmIOf } from "./codec/core.js";

/** What the router agreed in its INIT ack. */
export interface CookieState {
  zid: string;
  whatami: WhatAmI;
  snRes: number;
  reqRes: number;
  batchSize: number;
  patch: number;
  qos: boolean;
  /** When the cookie was made (ms since the epoch), to refuse stale ones. */
  issuedAt: number;
  /** The user/password nonce of the INIT ack, when the router asked for credentials. */
  nonce?: bigint | undefined;
}

const MAC_BYTES = 16;

/** Seals and opens cookies under one secret (random per process unless given). */
export class CookieJar {
  private readonly secret: Buffer;

  constructor(secret: Buffer = randomBytes(32)) {
    this.secret = secret;
  }

  seal(state: CookieState): Buffer {
    const w = new BinaryWriter(64);
    w.lenString(state.zid)
      .u8(whatAmICode(state.whatami))
      .u8(state.snRes)
      .u8(state.reqRes)
      .u16(state.batchSize)
      .u8(state.patch)
      .u8(state.qos ? 1 : 0)
      .u64(BigInt(state.issuedAt))
      .u8(state.nonce === undefined ? 0 : 1)
      .u64(state.nonce ?? 0n)
      .bytes(randomBytes(8));
    const body = w.view();
    const mac = this.mac(body);
    return Buffer.concat([body, mac]);
  }

  /** The state a cookie holds; throws `DecodeError` when it is forged, malformed or older than `maxAgeMs`. */
  open(cookie: Buffer, maxAgeMs: number, now = Date.now()): CookieState {
    if (cookie.length <= MAC_BYTES) throw new DecodeError("cookie too short");
    const body = cookie.subarray(0, cookie.length - MAC_BYTES);
    const mac = cookie.subarray(cookie.length - MAC_BYTES);
    if (!timingSafeEqual(mac, this.mac(body))) throw new DecodeError("cookie does not verify");
    const r = new BinaryReader(body);
    const state: CookieState = {
      zid: r.lenString(32),
      whatami: whatAmIOf(r.u8()),
      snRes: r.u8(),
      reqRes: r.u8(),
      batchSize: r.u16(),
      patch: r.u8(),
      qos: r.u8() === 1,
      issuedAt: Number(r.u64()),
    };
    const withNonce = r.u8() === 1;
    const nonce = r.u64();
    if (withNonce) state.nonce = nonce;
    if (now - state.issuedAt > maxAgeMs) throw new DecodeError("cookie expired");
    return state;
  }

  private mac(body: Uint8Array): Buffer {
    return createHmac("sha256", this.secret).update(body).digest().subarray(0, MAC_BYTES);
  }
}
