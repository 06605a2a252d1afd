/**
 * Every benchmark `npm run bench` knows, in the order a full run takes them. Adding one: write
 * `suites/<name>.ts` exporting `run(): Promise<BenchResult>`, then add a line here.
 */
import type { BenchModule } from "./lib/types.js";

export interface BenchEntry {
  /** Short name used on the command line: `npm run bench -- get put`. */
  name: string;
  /** Human title, used in the printed line and the Markdown table. */
  title: string;
  /** The issue whose benchmark table this implements. */
  issue: number;
  load: () => Promise<BenchModule>;
}

export const BENCHMARKS: BenchEntry[] = [
  { name: "get", title: "GET one key", issue: 2, load: () => import("./suites/get.js") },
  { name: "put", title: "PUT 100 bytes", issue: 2, load: () => import("./suites/put.js") },
  {
    name: "mixed",
    title: "90% GET / 10% PUT over 1,000 keys of 100 bytes",
    issue: 12,
    load: () => import("./suites/mixed.js"),
  },
  { name: "get-wild", title: "GET demo/** over 1,000 keys", issue: 12, load: () => import("./suites/get-wild.js") },
  {
    name: "routing",
    title: "Routing one put, 100,000 vs 10 subscriptions",
    issue: 2,
    load: () => import("./suites/routing.js"),
  },
  {
    name: "sse",
    title: "SSE fan-out, 1,000 subscribers, 50 puts/s for 20 s",
    issue: 12,
    load: () => import("./suites/sse.js"),
  },
  {
    name: "http2",
    title: "HTTP/2 vs HTTP/1.1 GET and PUT on the same router (TLS)",
    issue: 28,
    load: () => import("./suites/http2.js"),
  },
  {
    name: "live",
    title: "Long-poll wake, 10,000 parked long-polls, snapshot of 100,000 keys then live (HTTP/2)",
    issue: 28,
    load: () => import("./suites/live.js"),
  },
  {
    name: "live-memory",
    title: "10,000 parked long-polls against a bare node server holding as many (HTTP/2 and HTTP/1.1)",
    issue: 28,
    load: () => import("./suites/live-memory.js"),
  },
  {
    name: "sse-resume",
    title: "SSE fan-out with event ids and the resume log, vs without",
    issue: 13,
    load: () => import("./suites/sse-resume.js"),
  },
  { name: "memory", title: "Memory, 1,000,000 keys of 100 bytes", issue: 2, load: () => import("./suites/memory.js") },
  {
    name: "conditional-put",
    title: "Conditional PUT (If-None-Match: *) vs plain PUT",
    issue: 13,
    load: () => import("./suites/conditional-put.js"),
  },
  {
    name: "cluster-conditional",
    title: "Conditional PUT across routers vs a bare JetStream KV update",
    issue: 36,
    load: () => import("./suites/cluster-conditional.js"),
  },
  { name: "sqlite-put", title: "SQLite volume PUT, vs memory", issue: 3, load: () => import("./suites/sqlite-put.js") },
  {
    name: "sqlite-get",
    title: "SQLite volume GET one key, vs memory (read cache off)",
    issue: 3,
    load: () => import("./suites/sqlite-get.js"),
  },
  {
    name: "influx",
    title: "InfluxDB volume: PUT one key vs memory, range query over 10,000 points",
    issue: 3,
    load: () => import("./suites/influx.js"),
  },
  {
    name: "nats-get",
    title: "Cross-router GET over NATS, vs its floor (one router + bare NATS request/reply)",
    issue: 38,
    load: () => import("./suites/nats-get.js"),
  },
  {
    name: "nats-put",
    title: "PUT through the NATS fabric to a remote subscriber, vs in-process (and its floor)",
    issue: 38,
    load: () => import("./suites/nats-put.js"),
  },
  {
    name: "nats-routers",
    title: "Three routers vs one on a NATS cluster: CPU per PUT (and its floor)",
    issue: 38,
    load: () => import("./suites/nats-routers.js"),
  },
  {
    name: "access",
    title: "GET and PUT with 100 rules and Basic auth, vs no access control",
    issue: 9,
    load: () => import("./suites/access.js"),
  },
  { name: "https", title: "HTTPS GET and PUT, vs bare node:https", issue: 9, load: () => import("./suites/https.js") },
  {
    name: "worst-selector",
    title: "Worst selector over 100,000 keys, and a one-key GET meanwhile",
    issue: 9,
    load: () => import("./suites/worst-selector.js"),
  },
  {
    name: "jetstream-put",
    title: "jetstream volume PUT (3 replicas), vs @nats-io/kv",
    issue: 38,
    load: () => import("./suites/jetstream-put.js"),
  },
  {
    name: "remote-pubsub",
    title: "zenoh-ts put → zenoh-ts subscriber over the remote API, vs REST PUT",
    issue: 10,
    load: () => import("./suites/remote-pubsub.js"),
  },
  {
    name: "remote-fanout",
    title: "Remote API fan-out, 1,000 samples/s to 100 WebSocket subscribers, vs SSE",
    issue: 10,
    load: () => import("./suites/remote-fanout.js"),
  },
  {
    name: "growth",
    title: "How cost grows: 1k to 1M keys, 1 to 1,000 SSE subscribers, 1 to 3 routers",
    issue: 12,
    load: () => import("./suites/growth.js"),
  },
  {
    name: "explorer",
    title: "Explorer page: 10,000 keys in headless Chromium",
    issue: 13,
    load: () => import("./suites/explorer.js"),
  },
  {
    name: "zenoh-thr",
    title: "zenoh z_pub_thr -s 8 → zest → z_sub_thr, vs zenoh's router and the pair peer to peer",
    issue: 35,
    load: () => import("./suites/zenoh-thr.js"),
  },
  {
    name: "zenoh-ping",
    title: "zenoh z_ping/z_pong round trip through zest, vs zenoh's router and the pair peer to peer",
    issue: 35,
    load: () => import("./suites/zenoh-ping.js"),
  },
  {
    name: "zenoh-python-thr",
    title: "zenoh-python publisher → zest → subscriber, vs zenoh's router and the pair peer to peer",
    issue: 35,
    load: () => import("./suites/zenoh-python-thr.js"),
  },
  {
    name: "zenoh-sse",
    title: "zenoh puts at 10,000/s reaching an SSE client",
    issue: 25,
    load: () => import("./suites/zenoh-sse.js"),
  },
  {
    name: "join-sse",
    title: "zest joined to zenoh's router: puts at 10,000/s on the router's side reaching an SSE client on zest",
    issue: 37,
    load: () => import("./suites/join-sse.js"),
  },
  {
    name: "join-thr",
    title: "zest joined to zenoh's router: z_pub_thr on the router's side → z_sub_thr on zest, vs both on the router",
    issue: 37,
    load: () => import("./suites/join-thr.js"),
  },
  {
    name: "zenoh-sessions",
    title: "1,000 concurrent zenoh sessions: RSS per session, vs zenoh's router",
    issue: 35,
    load: () => import("./suites/zenoh-sessions.js"),
  },
  {
    name: "zenohd-rest",
    title: "REST gateway vs zenohd's REST plugin: GET one key, GET demo/** over 1,000 keys, PUT, SSE",
    issue: 35,
    load: () => import("./suites/zenohd-rest.js"),
  },
  {
    name: "replication",
    title: "Replication: convergence after a 30 s partition (100,000 keys, 10% changed), idle traffic, PUT on vs off",
    issue: 26,
    load: () => import("./suites/replication.js"),
  },
  {
    name: "ttl-expiry",
    title: "1,000,000 keys expiring over 60 s, with a mixed workload",
    issue: 27,
    load: () => import("./suites/ttl-expiry.js"),
  },
  {
    name: "ttl-memory",
    title: "Memory per TTL, 1,000,000 keys",
    issue: 27,
    load: () => import("./suites/ttl-memory.js"),
  },
  { name: "ttl-put", title: "PUT with ?_ttl= vs plain PUT", issue: 27, load: () => import("./suites/ttl-put.js") },
];
