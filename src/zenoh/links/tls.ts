/**
 * The TLS listener of the zenoh door (docs/zenoh-protocol.md, "TLS"): batches framed as on TCP,
 * inside TLS (`node:tls`). With mutual TLS on, a client must present a certificate signed by
 * the configured root CA; a failed TLS handshake (no or a bad certificate, plain TCP, an old
 * protocol) is refused with a log line before any zenoh message is read.
 */
import type { Buffer } from "node:buffer";
import type { Socket } from "node:net";
import { createServer, type TLSSocket } from "node:tls";
import { errorMessage } from "../../core/errors.js";
import type { Logger } from "../../core/log.js";
import type { Endpoint } from "../endpoint.js";
import type { LinkListener, OnWire } from "./listener.js";
import { StreamWire } from "./stream.js";
import { listenServer } from "./tcp.js";

/** The TLS material and policy of the door's `tls/` endpoints. */
export interface TlsLinkOptions {
  /** PEM certificate chain and private key. */
  cert: Buffer | string;
  key: Buffer | string;
  /** Mutual TLS: clients must present a certificate signed by `ca`. */
  mtls: boolean;
  /** PEM root CA certificate(s) client certificates are verified against. */
  ca?: Buffer | string;
  /** Time allowed for the TLS handshake (ms). */
  handshakeTimeoutMs: number;
  /** Whether a connection from `ip` may start a TLS handshake (the session caps). */
  admits(ip: string): boolean;
}

/** Listens on a `tls/` endpoint; a port in use rejects with a one-line `unavailable` error. */
export async function listenTls(
  e: Endpoint,
  tls: TlsLinkOptions,
  onWire: OnWire,
  logger: Logger,
): Promise<LinkListener> {
  const server = createServer(
    {
      cert: tls.cert,
      key: tls.key,
      ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
      requestCert: tls.mtls,
      rejectUnauthorized: tls.mtls,
      handshakeTimeout: tls.handshakeTimeoutMs,
      minVersion: "TLSv1.2",
    },
    (socket: TLSSocket) => onWire(new StreamWire("tls", socket)),
  );
  // The caps apply before the TLS handshake, so that a flood of handshakes costs no crypto.
  server.on("connection", (raw: Socket) => {
    if (!tls.admits(raw.remoteAddress ?? "?")) raw.destroy();
  });
  server.on("tlsClientError", (err: Error, socket: TLSSocket) => {
    logger.info(
      { address: socket.remoteAddress, err: errorMessage(err) },
      "zenoh TLS connection refused: the TLS handshake failed",
    );
  });
  return listenServer(server, e, logger);
}
