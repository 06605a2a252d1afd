/**
 * TLS options for a front door's server (`node:https` for REST and SSE, and the remote API's
 * `wss`): the PEM certificate chain and private key named by `plugins.rest.tls`.
 */
import type { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import type { TlsConfig } from "./schema.js";

/** Reads the certificate and key files; throws an Error naming the file that cannot be read. */
export function loadTlsOptions(tls: TlsConfig): { cert: Buffer; key: Buffer } {
  return {
    cert: readPemFile(tls.listen_certificate, "listen_certificate"),
    key: readPemFile(tls.listen_private_key, "listen_private_key"),
  };
}

/** Reads one PEM file; throws an Error naming `what` and the file when it cannot be read or is not PEM. */
export function readPemFile(path: string, what: string): Buffer {
  let pem: Buffer;
  try {
    pem = readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(`cannot read TLS ${what} ${path}: ${code === "ENOENT" ? "no such file" : (err as Error).message}`);
  }
  if (!pem.includes("-----BEGIN ")) throw new Error(`TLS ${what} ${path} is not a PEM file`);
  return pem;
}
