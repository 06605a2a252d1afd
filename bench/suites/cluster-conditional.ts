/**
 * Conditional writes across routers (issue 36) against their floor: a real 3-node NATS cluster,
 * routers A and B, each with a memory storage on `cm/**` and a `jetstream` storage (3 replicas)
 * on `cj/**`. Sequential `If-Match` PUTs of 100 bytes through A, each on the ETag the previous
 * one answered (a counter's loop, no contention): on `cm/k` A claims the version in the JetStream
 * bucket `zest_claims`, then writes and waits for B's acknowledgement; on `cj/k` the bucket
 * decides. Plain PUTs of the same keys are measured beside them.
 *
 * The floor, in the same run: a bare JetStream KV update with an expected revision, sent by this
 * process one after the other (`kv.update`), on the stream of the `jetstream` storage's own bucket
 * (a key of its own, `floor.k`): the same stream leader, so where JetStream placed it (on A's
 * nats-server or across a route) weighs on both alike. The HTTP floor, the least an HTTP gateway
 * can cost here: a bare `node:http` server (`baselines/kv-http.mjs`, connected to A's nats-server)
 * answering each `If-Match` PUT after one such KV update on the same stream, driven by the same
 * sequential client. Every series is first run `WARM_OPS` times unmeasured, so each process's
 * code is optimized (a router measured cold paid the JIT in its latency); then rounds alternate
 * the series, and each figure is the median over every round. Ratio: the median conditional PUT
 * on memory storages over the floor (the jetstream volume's, and each over the HTTP floor, are in
 * the figures and the summary). CPU per write is every process's (A, B, the HTTP floor, the
 * nats-servers, this one); the messages the nats-servers took in per write (their `/varz`) count
 * the round trips.
 */
import { request, Agent } from "node:http";
import { loadavg } from "node:os";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import { fmtNum } from "../lib/format.js";
import { type NatsCluster, natsPids, spawnRouter, startNatsCluster, waitRoutersMeet } from "../lib/nats.js";
import { processCpuSeconds, type ServerProcess, spawnBaseline } from "../lib/proc.js";
import { jetstreamVolume, memory, storagesCfg } from "../lib/storages.js";
import type { BenchResult } from "../lib/types.js";

/** Issue 36: a conditional write across routers costs at most this many floors. */
const TARGET = 1.5;
const ROUNDS = 8;
const PER_ROUND = 60;
/** Unmeasured writes per series before the rounds: enough for V8 to optimize every process's path. */
const WARM_OPS = 1_500;
const BODY = "x".repeat(100);

type Series = "floor" | "httpFloor" | "condMem" | "plainMem" | "condJs" | "plainJs" | "condLocal";

export async function run(): Promise<BenchResult> {
  let cluster: NatsCluster | undefined;
  const servers: ServerProcess[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let nc: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    cluster = await startNatsCluster();
    const both = { cm: memory("cm/**"), cj: jetstreamVolume("cj/**", 3) };
    // `cl/**` only on A: a conditional write there needs no claim (what A alone adds).
    const [a, b] = await Promise.all([
      spawnRouter("zest-cond-a", "A1", cluster.urls[0]!, storagesCfg({ ...both, cl: memory("cl/**") })),
      spawnRouter("zest-cond-b", "B2", cluster.urls[1]!, storagesCfg(both)),
    ]);
    servers.push(a!, b!);
    // The HTTP floor writes the stream of the `cj` storage's bucket (created by the routers).
    const httpFloor = await spawnBaseline("kv-http.mjs", [cluster.urls[0]!, "zest_cj", "3"], "kv-http");
    servers.push(httpFloor);
    await waitRoutersMeet([
      { server: a!, id: "A1" },
      { server: b!, id: "B2" },
    ]);
    nc = await connect({ servers: cluster.urls[0]! });
    const js = jetstream(nc);
    const kv = await new Kvm(js).open("zest_cj");
    let revision = await kv.put("floor.k", BODY);
    const jsm = await js.jetstreamManager();
    const leaderNode = async (stream: string): Promise<number> => {
      const leader = (await jsm.streams.info(stream)).cluster?.leader;
      return cluster!.nodes.findIndex((n) => n.name === leader) + 1;
    };
    const load0 = loadavg()[0]!;

    const put = (
      path: string,
      headers: Record<string, string>,
      url = a!.url,
    ): Promise<{ status: number; etag: string }> =>
      new Promise((resolve, reject) => {
        const req = request(
          `${url}${path}`,
          { method: "PUT", agent, headers: { "content-type": "text/plain", ...headers } },
          (res) => {
            res.resume();
            res.on("end", () => resolve({ status: res.statusCode ?? 0, etag: String(res.headers.etag ?? "") }));
          },
        );
        req.on("error", reject);
        req.end(BODY);
      });
    /** The key's ETag, read through A (a plain PUT answers none). */
    const etagOf = async (path: string): Promise<string> => {
      const res = await fetch(`${a!.url}${path}`);
      await res.arrayBuffer();
      const etag = res.headers.get("etag");
      if (!etag) throw new Error(`GET ${path} answered ${res.status} and no ETag`);
      return etag;
    };
    const etags = { "/cm/k": "", "/cj/k": "", "/cl/k": "" };
    let httpFloorEtag = (await put("/floorhttp/k", {}, httpFloor.url)).etag;
    for (const path of ["/cm/k", "/cj/k", "/cl/k"] as const) {
      const first = await put(path, {});
      if (first.status !== 200) throw new Error(`PUT ${path} answered ${first.status}`);
    }
    const op: Record<Series, () => Promise<void>> = {
      floor: async () => {
        revision = await kv.update("floor.k", BODY, revision);
      },
      httpFloor: async () => {
        const r = await put("/floorhttp/k", { "if-match": httpFloorEtag }, httpFloor.url);
        if (r.status !== 200) throw new Error(`the HTTP floor answered ${r.status}`);
        httpFloorEtag = r.etag;
      },
      condMem: () => conditional("/cm/k"),
      plainMem: () => plain("/cm/k"),
      condJs: () => conditional("/cj/k"),
      plainJs: () => plain("/cj/k"),
      condLocal: () => conditional("/cl/k"),
    };
    async function conditional(path: "/cm/k" | "/cj/k" | "/cl/k"): Promise<void> {
      const r = await put(path, { "if-match": etags[path] });
      if (r.status !== 200) throw new Error(`conditional PUT ${path} answered ${r.status}`);
      etags[path] = r.etag;
    }
    async function plain(path: "/cm/k" | "/cj/k"): Promise<void> {
      const r = await put(path, {});
      if (r.status !== 200) throw new Error(`PUT ${path} answered ${r.status}`);
    }

    const pids = [a!.pid, b!.pid, httpFloor.pid, ...natsPids(cluster)];
    /** Messages the nats-servers took in so far (clients' and other servers'): the round trips, counted. */
    const monitors = cluster.nodes.map((n) => `http://127.0.0.1:${n.monitorPort}/varz`);
    const natsMessages = async (): Promise<number> => {
      let total = 0;
      for (const url of monitors) total += ((await (await fetch(url)).json()) as { in_msgs: number }).in_msgs;
      return total;
    };
    const order: Series[] = ["floor", "httpFloor", "condMem", "plainMem", "condJs", "plainJs", "condLocal"];
    /** One value per series, each made by `make`. */
    const perSeries = <T>(make: () => T): Record<Series, T> =>
      Object.fromEntries(order.map((k) => [k, make()])) as Record<Series, T>;
    const msgs = perSeries(() => 0);
    const samples = perSeries((): number[] => []);
    const cpu = perSeries(() => 0);
    const cpuBy = perSeries(() => [0, 0, 0, 0]);
    for (let round = 0; round <= ROUNDS; round++) {
      // Round 0 warms every path up and is not counted; then the order turns each round.
      const series = order.map((_, i) => order[(i + round) % order.length]!);
      for (const s of series) {
        // The ETags the conditional PUTs start from, read outside the measure.
        etags["/cm/k"] = await etagOf("/cm/k");
        etags["/cj/k"] = await etagOf("/cj/k");
        etags["/cl/k"] = await etagOf("/cl/k");
        const msgs0 = await natsMessages();
        const each0 = pids.map(processCpuSeconds);
        const cpu0 = each0.reduce((t, c) => t + c, 0) + process.cpuUsage().user / 1e6;
        for (let i = 0; i < (round === 0 ? WARM_OPS : PER_ROUND); i++) {
          const t = process.hrtime.bigint();
          await op[s]();
          if (round > 0) samples[s].push(Number(process.hrtime.bigint() - t) / 1e6);
        }
        const each1 = pids.map(processCpuSeconds);
        const cpu1 = each1.reduce((t, c) => t + c, 0) + process.cpuUsage().user / 1e6;
        if (round > 0) {
          cpu[s] += cpu1 - cpu0;
          // Where it went: router A, router B, the HTTP floor's server, the nats-servers.
          const by = cpuBy[s];
          for (let k = 0; k < pids.length; k++) by[Math.min(k, 3)] += each1[k]! - each0[k]!;
        }
        // Heartbeats go on meanwhile (a few per second): they are in the count too, a small part.
        if (round > 0) msgs[s] += (await natsMessages()) - msgs0;
      }
    }
    const median = (s: Series): number => {
      const v = [...samples[s]].sort((x, y) => x - y);
      return v[Math.floor(v.length / 2)]!;
    };
    const m = Object.fromEntries(order.map((s) => [s, median(s)])) as Record<Series, number>;
    const usPerOp = (s: Series): number => (cpu[s] / samples[s].length) * 1e6;
    /** CPU per write of A, B, the HTTP floor's server and the nats-servers. */
    const split = (s: Series): number[] => cpuBy[s].map((c) => (c / samples[s].length) * 1e6);
    const msgsPerOp = (s: Series): number => msgs[s] / samples[s].length;
    const ratio = m.condMem / m.floor;
    const jsRatio = m.condJs / m.floor;
    const httpRatio = m.httpFloor / m.floor;
    const jsOverHttp = m.condJs / m.httpFloor;
    const load1 = loadavg()[0]!;
    const [jsLeader, claimsLeader] = [await leaderNode("KV_zest_cj"), await leaderNode("KV_zest_claims")];
    return {
      name: "cluster-conditional",
      figures: {
        floorMs: m.floor,
        httpFloorMs: m.httpFloor,
        httpFloorRatio: httpRatio,
        condJsOverHttpFloor: jsOverHttp,
        condMemOverHttpFloor: m.condMem / m.httpFloor,
        httpFloorCpuUsPerOp: usPerOp("httpFloor"),
        httpFloorNatsMsgsPerOp: msgsPerOp("httpFloor"),
        // 1: the stream leader is on A's nats-server (no route crossed); 2 or 3: another node.
        jsStreamLeaderNode: jsLeader,
        claimsStreamLeaderNode: claimsLeader,
        loadAvgStart: load0,
        loadAvgEnd: load1,
        condMemMs: m.condMem,
        plainMemMs: m.plainMem,
        condJsMs: m.condJs,
        plainJsMs: m.plainJs,
        condLocalMs: m.condLocal,
        condMemRatio: ratio,
        condJsRatio: jsRatio,
        plainMemRatio: m.plainMem / m.floor,
        floorCpuUsPerOp: usPerOp("floor"),
        condMemCpuUsPerOp: usPerOp("condMem"),
        condJsCpuUsPerOp: usPerOp("condJs"),
        condJsCpuAUsPerOp: split("condJs")[0]!,
        condJsCpuBUsPerOp: split("condJs")[1]!,
        condJsCpuNatsUsPerOp: split("condJs")[3]!,
        httpFloorCpuServerUsPerOp: split("httpFloor")[2]!,
        httpFloorCpuNatsUsPerOp: split("httpFloor")[3]!,
        floorCpuNatsUsPerOp: split("floor")[3]!,
        floorNatsMsgsPerOp: msgsPerOp("floor"),
        condMemNatsMsgsPerOp: msgsPerOp("condMem"),
        plainMemNatsMsgsPerOp: msgsPerOp("plainMem"),
        condJsNatsMsgsPerOp: msgsPerOp("condJs"),
        plainJsNatsMsgsPerOp: msgsPerOp("plainJs"),
      },
      ratio,
      target: `<= ${TARGET}x`,
      pass: ratio <= TARGET && jsRatio <= TARGET,
      summary:
        `If-Match PUT through A, medians of ${ROUNDS * PER_ROUND}: memory storages on A and B ${fmtNum(m.condMem, 2)} ms ` +
        `(${fmtNum(ratio, 2)}x the floor; plain ${fmtNum(m.plainMem, 2)} ms, ${fmtNum(m.plainMem / m.floor, 2)}x), ` +
        `jetstream volume ${fmtNum(m.condJs, 2)} ms (${fmtNum(jsRatio, 2)}x; plain ${fmtNum(m.plainJs, 2)} ms), ` +
        `a key only A holds ${fmtNum(m.condLocal, 2)} ms (no claim) / ` +
        `bare JetStream KV update (R3, expected revision, the volume's stream) ${fmtNum(m.floor, 2)} ms; ` +
        `HTTP floor (bare node:http + that KV update) ${fmtNum(m.httpFloor, 2)} ms = ${fmtNum(httpRatio, 2)}x the floor, ` +
        `jetstream volume over it ${fmtNum(jsOverHttp, 2)}x, memory storages ${fmtNum(m.condMem / m.httpFloor, 2)}x; CPU per write, all processes: ` +
        `${fmtNum(usPerOp("condMem"), 0)} / ${fmtNum(usPerOp("condJs"), 0)} / ${fmtNum(usPerOp("floor"), 0)} / HTTP floor ${fmtNum(usPerOp("httpFloor"), 0)} µs; ` +
        `messages into the nats-servers per write: ${fmtNum(msgsPerOp("condMem"), 1)} / ${fmtNum(msgsPerOp("condJs"), 1)} / ${fmtNum(msgsPerOp("floor"), 1)} / ${fmtNum(msgsPerOp("httpFloor"), 1)} (plain ${fmtNum(msgsPerOp("plainMem"), 1)} / ${fmtNum(msgsPerOp("plainJs"), 1)}); ` +
        `CPU per write of the volume's conditional PUT: A ${fmtNum(split("condJs")[0]!, 0)}, B ${fmtNum(split("condJs")[1]!, 0)}, ` +
        `NATS ${fmtNum(split("condJs")[3]!, 0)} µs; of the HTTP floor: its server ${fmtNum(split("httpFloor")[2]!, 0)}, NATS ${fmtNum(split("httpFloor")[3]!, 0)} µs; ` +
        `stream leaders: volume n${jsLeader}, claims n${claimsLeader} (A on n1); load average ${fmtNum(load0, 1)} to ${fmtNum(load1, 1)}`,
    };
  } finally {
    agent.destroy();
    await nc?.close();
    await Promise.all(servers.map((z) => z.stop()));
    await cluster?.stop();
  }
}
