/**
 * The NATS fabric's default timings (docs/cluster.md), in one light module: `NatsFabric` falls
 * back on them and the `fabric` section's schema shows them as its defaults.
 */

/** How often a router says it is alive to the others. */
export const DEFAULT_HEARTBEAT_MS = 1_000;
/** A router silent this long is gone. */
export const DEFAULT_PEER_TIMEOUT_MS = 4_000;
/** How long a write waits for the other routers' acknowledgements: longer than `DEFAULT_PEER_TIMEOUT_MS`. */
export const DEFAULT_ACK_TIMEOUT_MS = 5_000;
/** How long connecting to NATS may take. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** The pause between two attempts to reconnect to NATS. */
export const DEFAULT_RECONNECT_TIME_WAIT_MS = 250;
