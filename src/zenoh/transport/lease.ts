/**
 * A transport's lease (docs/zenoh-protocol.md, "Lease"), as zenoh-pico's transport/unicast/lease.c:
 * the bounds of a peer's announced lease, the expiry of a silent peer, and the KEEP_ALIVEs that
 * keep this side alive for the peer.
 */
import { BinaryWriter } from "../../core/binary.js";
import { encodeKeepAlive } from "../codec/transport.js";

/**
 * The bounds of a peer's announced lease (docs/zenoh-protocol.md, "Lease"), the same as those
 * of the router's own (`transport.link.tx.lease`): a shorter one would have the router close
 * sessions at the first hiccup and tick many times a second; a longer one would keep a vanished
 * peer's session, its declarations and its session-bound values for hours.
 */
export const PEER_LEASE_MIN_MS = 500;
export const PEER_LEASE_MAX_MS = 3_600_000;

/** The lease the router expects a peer's traffic within, from the one the peer announced. */
export function honouredLease(announcedMs: number): number {
  return Math.min(PEER_LEASE_MAX_MS, Math.max(PEER_LEASE_MIN_MS, announcedMs));
}

/**
 * Something is sent at least four times per lease, as zenoh does, per the shorter of the two
 * leases (a client may expire the router by either): the KEEP_ALIVE period and the tick's (ms).
 */
export function keepAlivePeriod(peerLeaseMs: number, ownLeaseMs: number): number {
  return Math.min(peerLeaseMs, ownLeaseMs) / 4;
}

/** What an open transport's lease asks for at a tick. */
export interface LeaseState {
  /** When the peer was last heard (ms). */
  lastReceived: number;
  /** When this side last sent (ms). */
  lastSent: number;
  /** Reading is paused: the peer is silent because it is not read, and its lease does not run. */
  readPaused: boolean;
  /** The peer's honoured lease (ms). */
  peerLeaseMs: number;
  /** This side's lease (ms). */
  ownLeaseMs: number;
  /** Nothing is batched or queued: a KEEP_ALIVE would be the only traffic. */
  idle: boolean;
}

/**
 * `expired`: the peer was silent longer than the lease it announced (zenoh: the receiver of an
 * OPEN expires its sender by the sender's lease, not by its own). `keepalive`: this side must send
 * one. `none`: neither.
 */
export function leaseDue(now: number, s: LeaseState): "expired" | "keepalive" | "none" {
  if (!s.readPaused && now - s.lastReceived > s.peerLeaseMs) return "expired";
  if (now - s.lastSent >= keepAlivePeriod(s.peerLeaseMs, s.ownLeaseMs) && s.idle) return "keepalive";
  return "none";
}

/** A KEEP_ALIVE batch, its length included. */
export function keepAliveBatch(): Uint8Array {
  const w = new BinaryWriter(4);
  w.u16(1);
  encodeKeepAlive(w);
  return w.view();
}
