/**
 * A transport's INIT/OPEN handshake (docs/zenoh-protocol.md, "Transport"), both sides, as
 * zenoh-pico's transport/unicast/accept.c and transport.c: what each step checks, what it agrees
 * (resolutions, batch size, patch, QoS, lease, initial SNs) and the answer it sends. The accepting
 * side keeps no state between its INIT ack and the OPEN syn: what it agreed travels in a sealed
 * cookie. A refusal is a CLOSE reason; malformed input throws a `DecodeError`.
 */
import { Buffer } from "node:buffer";
import { randomInt } from "node:crypto";
import { BinaryWriter, DecodeError } from "../../core/binary.js";
import type { Logger } from "../../core/log.js";
import { PROTOCOL_VERSION, type WhatAmI } from "../codec/core.js";
import {
  CloseReason,
  encodeInitAck,
  encodeInitSyn,
  encodeOpen,
  type InitMsg,
  type OpenMsg,
} from "../codec/transport.js";
import { usrPwdClient } from "../auth-usrpwd.js";
import type { CookieJar } from "../cookie.js";
import { honouredLease } from "./lease.js";
import { snMask } from "./sequence.js";
import { BATCH_LEN } from "./tx.js";

/** What the peer announced in the handshake. */
export interface PeerInfo {
  zid: string;
  whatami: WhatAmI;
  address: string;
  /**
   * The lease the peer announced in its OPEN syn, bounded by `PEER_LEASE_MIN_MS` and
   * `PEER_LEASE_MAX_MS` (ms): the session is closed when the peer is silent this long.
   */
  leaseMs: number;
  batchSize: number;
  patch: number;
  qos: boolean;
  /** The user the handshake authenticated (user/password), if any. */
  user?: string | undefined;
}

/** A handshake step's refusal: the link is closed with CLOSE, the reason logged by the gate. */
export interface Refusal {
  readonly refused: string;
}

/**
 * Who may open a session (docs/security.md): asked at INIT syn and at OPEN syn, before the
 * router answers, so a refused client gets CLOSE instead of an ack.
 */
export interface HandshakeGate {
  /** At INIT syn: a nonce (and the ack's auth extension) when credentials are taken, or a refusal. */
  onInit(m: InitMsg, address: string): { nonce?: bigint; auth?: Buffer } | Refusal;
  /** At OPEN syn: the authenticated user (and the ack's auth extension), or a refusal. */
  onOpen(m: OpenMsg, nonce: bigint | undefined, peer: PeerInfo): { user?: string; auth?: Buffer } | Refusal;
}

/** What the handshake of one transport works with. */
export interface HandshakeContext {
  /** The transport's id and peer address, for log lines and the gate. */
  readonly linkId: number;
  readonly address: string;
  /** The largest batch the link carries (on UDP a batch is one datagram). */
  readonly mtu: number;
  /** This side's zid. */
  readonly zid: string;
  readonly cookies: CookieJar;
  readonly logger: Logger;
  readonly gate?: HandshakeGate | undefined;
  readonly limits: { readonly handshakeTimeoutMs: number; readonly leaseMs: number; readonly batchSize: number };
}

/** The handshake refused or could not go on: the transport is closed with this CLOSE reason. */
export interface Closing {
  readonly close: number;
}

/** What a handshake step agreed, and the answer to send. */
export interface Agreed {
  readonly peer: PeerInfo;
  readonly batchSize: number;
  /** The SN modulo of the resolution agreed. */
  readonly snMask: number;
  /** The initial SN this side announced (its output lanes start there). */
  readonly initialSn: number;
  /** The answer, a batch with its length. */
  readonly reply: Uint8Array;
}

/** Writes one transport message as a batch with its length. */
function batch(size: number, encode: (w: BinaryWriter) => void): Uint8Array {
  const w = new BinaryWriter(size);
  w.u16(0);
  encode(w);
  w.patchU16(0, w.length - BATCH_LEN);
  return w.view();
}

// ---- accepting side -------------------------------------------------------------------------

/** The INIT syn: the INIT ack, with the cookie that carries what was agreed, or a refusal. */
export function answerInitSyn(m: InitMsg, c: HandshakeContext): { reply: Uint8Array } | Closing {
  if (m.version !== PROTOCOL_VERSION) {
    c.logger.info({ link: c.linkId, version: m.version }, "zenoh INIT with another protocol version: refused");
    return { close: CloseReason.UNSUPPORTED };
  }
  if (m.whatami === "router") {
    // Routers mesh over NATS, not over zenoh's router protocol (docs/zenoh-protocol.md).
    c.logger.info({ link: c.linkId, zid: m.zid }, "zenoh router tried to connect: only clients and peers are accepted");
    return { close: CloseReason.UNSUPPORTED };
  }
  const admitted = c.gate?.onInit(m, c.address);
  if (admitted !== undefined && "refused" in admitted) return { close: CloseReason.GENERIC };
  const state = {
    zid: m.zid,
    whatami: m.whatami,
    snRes: Math.min(m.snRes, 2),
    reqRes: Math.min(m.reqRes, 2),
    // Bounded by the link too: on UDP a batch is one datagram.
    batchSize: Math.min(m.batchSize, c.limits.batchSize, c.mtu),
    patch: Math.min(m.patch, 1),
    qos: m.qos,
    issuedAt: Date.now(),
    nonce: admitted?.nonce,
  };
  const reply = batch(128, (w) =>
    encodeInitAck(w, {
      whatami: "router",
      zid: c.zid,
      snRes: state.snRes,
      reqRes: state.reqRes,
      batchSize: state.batchSize,
      cookie: c.cookies.seal(state),
      patch: state.patch,
      qos: state.qos,
      auth: admitted?.auth,
    }),
  );
  return { reply };
}

/** The OPEN syn: its cookie opened, the OPEN ack with the router's lease and initial SN, or a refusal. */
export function answerOpenSyn(m: OpenMsg, c: HandshakeContext): Agreed | Closing {
  const state = c.cookies.open(m.cookie ?? Buffer.alloc(0), c.limits.handshakeTimeoutMs);
  if (m.initialSn > snMask(state.snRes))
    throw new DecodeError(`OPEN initial SN ${m.initialSn} beyond the negotiated resolution (${snMask(state.snRes)})`);
  const peer: PeerInfo = {
    zid: state.zid,
    whatami: state.whatami,
    address: c.address,
    leaseMs: honouredLease(m.leaseMs),
    batchSize: state.batchSize,
    patch: state.patch,
    qos: state.qos,
  };
  const admitted = c.gate?.onOpen(m, state.nonce, peer);
  if (admitted !== undefined && "refused" in admitted) return { close: CloseReason.GENERIC };
  if (admitted?.user !== undefined) peer.user = admitted.user;
  // zenoh's modulo, not 2^bits: a zenoh-rust peer refuses an SN beyond it.
  const mask = snMask(state.snRes);
  const initialSn = randomInt(0, mask + 1);
  const reply = batch(32, (w) =>
    encodeOpen(w, { ack: true, leaseMs: c.limits.leaseMs, initialSn, qos: state.qos, auth: admitted?.auth }),
  );
  return { peer, batchSize: state.batchSize, snMask: mask, initialSn, reply };
}

// ---- initiating side ------------------------------------------------------------------------

/**
 * What this side asks for in its INIT syn: the resolutions and batch size zenoh's own defaults
 * use, fragment markers (patch 1) and QoS lanes; the acceptor answers with what it takes of them.
 */
export function initSyn(
  whatami: WhatAmI,
  credentials: { user: string; password: string } | undefined,
  c: HandshakeContext,
): Uint8Array {
  return batch(64, (w) =>
    encodeInitSyn(w, {
      whatami,
      zid: c.zid,
      snRes: 2,
      reqRes: 2,
      batchSize: Math.min(c.limits.batchSize, c.mtu),
      patch: 1,
      qos: true,
      auth: credentials === undefined ? undefined : usrPwdClient.initSyn(),
    }),
  );
}

/**
 * The acceptor's INIT ack (`offered`: the batch size the INIT syn asked for): what it took, and
 * its cookie, which the OPEN syn carries back. The peer's lease is known only at the OPEN ack.
 */
export function answerInitAck(
  m: InitMsg,
  offered: number,
  credentials: { user: string; password: string } | undefined,
  c: HandshakeContext,
): Agreed | Closing {
  if (m.version !== PROTOCOL_VERSION) {
    c.logger.info({ link: c.linkId, version: m.version }, "zenoh INIT ack with another protocol version: closed");
    return { close: CloseReason.UNSUPPORTED };
  }
  // The acceptor may only lower what was asked (zenoh takes the smaller of both).
  if (m.snRes > 2 || m.reqRes > 2 || m.batchSize > offered || m.batchSize < 64 || m.patch > 1)
    throw new DecodeError("INIT ack beyond what the INIT syn offered");
  const peer: PeerInfo = {
    zid: m.zid,
    whatami: m.whatami,
    address: c.address,
    leaseMs: 0,
    batchSize: m.batchSize,
    patch: m.patch,
    qos: m.qos,
  };
  const mask = snMask(m.snRes);
  const initialSn = randomInt(0, mask + 1);
  // user/password (docs/zenoh-protocol.md, "Credentials"): the HMAC of the password under the
  // ack's nonce. A router that sent no nonce takes no credentials: none are sent.
  const auth =
    credentials === undefined ? undefined : usrPwdClient.openSyn(m.auth, credentials.user, credentials.password);
  const reply = batch(128 + (m.cookie?.length ?? 0) + (credentials?.user.length ?? 0) * 3, (w) =>
    encodeOpen(w, {
      ack: false,
      leaseMs: c.limits.leaseMs,
      initialSn,
      cookie: m.cookie ?? Buffer.alloc(0),
      qos: m.qos,
      auth,
    }),
  );
  return { peer, batchSize: m.batchSize, snMask: mask, initialSn, reply };
}

/** The acceptor's OPEN ack: its initial SN checked, its lease honoured into `peer`. */
export function takeOpenAck(m: OpenMsg, peer: PeerInfo, mask: number): void {
  if (m.initialSn > mask)
    throw new DecodeError(`OPEN ack initial SN ${m.initialSn} beyond the negotiated resolution (${mask})`);
  peer.leaseMs = honouredLease(m.leaseMs);
}
