/**
 * The `fabric` section (docs/configuration.md, docs/cluster.md): how routers reach each other.
 * Defaults come from the fabric's own constants, and the section parses straight into the
 * options of `NatsFabric`, so the fabric never reads the config and nothing is converted twice.
 * This module loads no NATS code: the fabric itself is imported only when a router uses it.
 */
import { z } from "zod";
import { closed, MAX_TIMER_MS } from "../config/schema.js";
import type { NatsFabricOptions } from "./nats-fabric.js";
import {
  DEFAULT_ACK_TIMEOUT_MS,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_PEER_TIMEOUT_MS,
  DEFAULT_RECONNECT_TIME_WAIT_MS,
} from "./timings.js";

/** Most NATS URLs a router may be given. */
const MAX_SERVERS = 64;

const timer = (what: string, fallback: number) =>
  z.number().int().positive().max(MAX_TIMER_MS).default(fallback).describe(`${what}; at most ${MAX_TIMER_MS}`);

/** A list of URLs, or one string of comma-separated URLs (`--nats`), as a list without blanks. */
const servers = z
  .union([z.array(z.string().max(4096)).max(MAX_SERVERS), z.string().max(MAX_SERVERS * 4096)])
  .default([])
  .transform((raw) => (typeof raw === "string" ? raw.split(",") : raw).map((s) => s.trim()).filter(Boolean))
  .describe("NATS URLs, a list or a comma-separated string (none: the router runs alone)");

/** The options a `NatsFabric` is built with from the config (the logger is the runtime's). */
export type NatsFabricConfig = Required<
  Pick<
    NatsFabricOptions,
    "servers" | "heartbeatMs" | "peerTimeoutMs" | "ackTimeoutMs" | "connectTimeoutMs" | "reconnectTimeWaitMs"
  >
>;

export const fabricSchema = closed(
  {
    nats: closed(
      {
        servers,
        heartbeat_ms: timer("peer heartbeat period", DEFAULT_HEARTBEAT_MS),
        peer_timeout_ms: timer("a peer silent this long is gone", DEFAULT_PEER_TIMEOUT_MS),
        ack_timeout_ms: timer(
          "wait this long for a write's acknowledgements (more than peer_timeout_ms)",
          DEFAULT_ACK_TIMEOUT_MS,
        ),
        connect_timeout_ms: timer("NATS connection timeout", DEFAULT_CONNECT_TIMEOUT_MS),
        reconnect_time_wait_ms: timer("pause between reconnection attempts", DEFAULT_RECONNECT_TIME_WAIT_MS),
      },
      "the NATS fabric",
    ).optional(),
  },
  "how routers reach each other",
).transform((f): { nats: NatsFabricConfig | undefined } => ({
  // No server named: no fabric, the router runs alone.
  nats:
    f.nats === undefined || f.nats.servers.length === 0
      ? undefined
      : {
          servers: f.nats.servers,
          heartbeatMs: f.nats.heartbeat_ms,
          peerTimeoutMs: f.nats.peer_timeout_ms,
          ackTimeoutMs: f.nats.ack_timeout_ms,
          connectTimeoutMs: f.nats.connect_timeout_ms,
          reconnectTimeWaitMs: f.nats.reconnect_time_wait_ms,
        },
}));

/** The parsed `fabric` section: the NATS fabric's options, or none. */
export type FabricConfig = z.output<typeof fabricSchema>;
