/**
 * Quality of service a sample carries, as Zenoh 1.x defines it. zest keeps it with the sample
 * so a front door that speaks Zenoh (the remote API) can hand it back unchanged; the router
 * itself delivers every sample reliably, in order, whatever the priority says.
 */
export interface Qos {
  /** 1 (real time) … 5 (data, the default) … 7 (background). */
  readonly priority: number;
  readonly congestionControl: "drop" | "block";
  readonly express: boolean;
}

/** Zenoh's defaults for a put: priority DATA, congestion control DROP, not express. */
export const DEFAULT_PUT_QOS: Qos = { priority: 5, congestionControl: "drop", express: false };
/** Zenoh's defaults for a query and its replies: priority DATA, congestion control BLOCK. */
export const DEFAULT_QUERY_QOS: Qos = { priority: 5, congestionControl: "block", express: false };
