/**
 * What the door's listeners have in common (docs/zenoh-protocol.md, "Links"): one per endpoint,
 * each handing the server a `Wire` per remote, and one wording for a port that cannot be bound.
 */
import { ZestError } from "../../core/errors.js";
import { type Endpoint, formatEndpoint } from "../endpoint.js";
import type { Wire } from "./wire.js";

/** A listening endpoint. */
export interface LinkListener {
  /** Its locator with the real port (`udp/127.0.0.1:7447`). */
  readonly locator: string;
  /** Stops listening; the wires it gave are the server's to close. */
  close(): Promise<void>;
}

/** Called with each new remote's wire; the server binds it to a transport or refuses it. */
export type OnWire = (wire: Wire) => void;

/** The one-line error for an endpoint that cannot be bound. */
export function bindError(e: Endpoint, err: NodeJS.ErrnoException): ZestError {
  return err.code === "EADDRINUSE"
    ? ZestError.unavailable(
        `zenoh endpoint ${formatEndpoint(e)} is in use (another router?): give another with -l/--listen or listen.endpoints`,
      )
    : ZestError.unavailable(`zenoh endpoint ${formatEndpoint(e)}: ${err.message}`, err);
}
