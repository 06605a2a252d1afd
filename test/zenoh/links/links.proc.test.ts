/**
 * The zenoh door's links (src/zenoh/links/) with the raw test client: UDP unicast (a batch per
 * datagram, sessions demultiplexed by remote address, the same limits as TCP) and TLS (TCP's
 * framing inside TLS, mutual TLS, plain TCP refused).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { BinaryWriter } from "../../../src/core/binary.js";
import type { Logger } from "../../../src/core/log.js";
import type { Sample } from "../../../src/core/sample.js";
import { encodeDeclare, encodePush } from "../../../src/zenoh/codec/network.js";
import { CloseReason, encodeInitSyn } from "../../../src/zenoh/codec/transport.js";
import { UDP_MAX_MTU } from "../../../src/zenoh/links/udp.js";
import type { ZenohLimits, ZenohTls } from "../../../src/zenoh/server.js";
import { makeCertificate, makeClientCertificate } from "../../support/certificate.js";
import { runZestExpectingExit, startZest as startZestProcess } from "../../support/zest-process.js";
import { RawClient, wireKey, wirePut } from "../raw-client.js";
import { type TestZenohDoor, zenohDoor } from "../../support/zenoh-door.js";
import { capturingLogger } from "../../support/log.js";

const opened: Array<{ close(): unknown }> = [];
const dir = mkdtempSync(join(tmpdir(), "zest-links-"));
after(async () => {
  for (const o of opened.reverse()) await o.close();
  rmSync(dir, { recursive: true, force: true });
});

function door(
  endpoint: string,
  opts: { limits?: Partial<ZenohLimits>; tls?: ZenohTls; logger?: Logger } = {},
): Promise<TestZenohDoor> {
  return zenohDoor(opened, { endpoint, ...opts });
}

const key = wireKey;
const put = (payload: string | Buffer) => wirePut(payload, "text/plain");

async function udpClient(port: number, leaseMs?: number): Promise<RawClient> {
  const c = await RawClient.connectUdp(port);
  opened.push(c);
  await c.handshake(leaseMs === undefined ? {} : { leaseMs });
  return c;
}

// ---- UDP ------------------------------------------------------------------------------------

test("udp: a session opens over datagrams, its puts reach the router and the router's samples reach it", async () => {
  const { server, port, session } = await door("udp/127.0.0.1:0");
  assert.match(server.locators()[0]!, /^udp\/127\.0\.0\.1:\d+$/);
  const got: Sample[] = [];
  session.declareSubscriber("udp/**", (s) => void got.push(s));
  const c = await udpClient(port);
  const init = c.transport.find((t) => t.kind === "init");
  assert.ok(init?.kind === "init");
  assert.equal(init.msg.batchSize, UDP_MAX_MTU, "the batch is bounded by the datagram");
  c.sendFrame(
    (w) => encodePush(w, key("udp/a"), put("one")),
    (w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("udp/back/**") }),
  );
  await c.until(() => got.length === 1 || undefined);
  assert.equal(got[0]?.payload.toString(), "one");
  assert.match(server.status()[0]!.link, /^udp\/127\.0\.0\.1:\d+$/);
  await c.until(() => session.matchingStatus("udp/back/x", "subscribers") || undefined);
  await session.put("udp/back/x", "two");
  const push = await c.waitNetwork((m) => m.kind === "push");
  assert.ok(push.kind === "push" && push.key.suffix === "udp/back/x");
  // Datagrams carry no length prefix: the batch decoded whole (a prefix would be read as a message).
  assert.ok(c.batches.every((b) => b.length <= UDP_MAX_MTU));
});

test("udp: a sample larger than the batch goes as fragments, one datagram each, within the agreed batch size", async () => {
  const { port, session } = await door("udp/127.0.0.1:0");
  const c = await RawClient.connectUdp(port);
  opened.push(c);
  // A small batch, as a constrained client announces it.
  c.sendBatch((w) => encodeInitSyn(w, { whatami: "client", zid: "AB", patch: 1, batchSize: 1200 }));
  const ack = await c.waitTransport((t) => t.kind === "init");
  assert.ok(ack.kind === "init" && ack.msg.batchSize === 1200);
  const { encodeOpen } = await import("../../../src/zenoh/codec/transport.js");
  c.sendBatch((w) => encodeOpen(w, { ack: false, leaseMs: 10_000, initialSn: 0, cookie: ack.msg.cookie }));
  await c.waitTransport((t) => t.kind === "open");
  c.sendFrame((w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("big/**") }));
  await c.until(() => session.matchingStatus("big/x", "subscribers") || undefined);
  await session.put("big/x", Buffer.alloc(5000, 7));
  await c.until(() => c.transport.filter((t) => t.kind === "fragment").length >= 5 || undefined);
  assert.ok(
    c.batches.every((b) => b.length <= 1200),
    "a datagram larger than the batch size",
  );
});

test("udp: a malformed datagram closes that session only; garbage from an unknown address gets CLOSE and leaves no session", async () => {
  const { server, port } = await door("udp/127.0.0.1:0");
  const good = await udpClient(port);
  const bad = await udpClient(port);
  assert.equal(server.status().length, 2);
  bad.sendRaw(Buffer.from([0x25, 0x00, 0x3d])); // FRAME, then a truncated PUSH
  await bad.until(() => bad.closeReason !== undefined || undefined);
  assert.equal(bad.closeReason, CloseReason.INVALID);
  const stranger = await RawClient.connectUdp(port);
  opened.push(stranger);
  stranger.sendRaw(Buffer.from([0x1f, 0xff, 0xff]));
  await stranger.until(() => stranger.closeReason !== undefined || undefined);
  await good.until(() => server.status().length === 1 || undefined);
  assert.equal(server.status().length, 1);
  // The good session still works.
  good.sendFrame((w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("still/**") }));
  await good.until(() => server.status()[0]?.declarations === 1 || undefined);
});

test("udp: a datagram larger than the agreed batch size closes the session", async () => {
  const { port } = await door("udp/127.0.0.1:0", { limits: { batchSize: 2048 } });
  const c = await udpClient(port);
  const w = new BinaryWriter();
  w.u16(0);
  encodePush(w, key("too/big"), put(Buffer.alloc(4000, 1)));
  c.sendFrame((b) => b.bytes(w.view().subarray(2)));
  await c.until(() => c.closeReason !== undefined || undefined);
  assert.equal(c.closeReason, CloseReason.INVALID);
});

test("udp: sessions per address are bounded, and a silent session's lease expires", async () => {
  const { server, port } = await door("udp/127.0.0.1:0", { limits: { maxSessionsPerAddress: 1 } });
  const a = await udpClient(port, 1000);
  const b = await RawClient.connectUdp(port);
  opened.push(b);
  b.sendBatch((w) => encodeInitSyn(w, { whatami: "client", zid: "BB" }));
  await b.until(() => b.closeReason !== undefined || undefined);
  assert.equal(b.closeReason, CloseReason.MAX_SESSIONS);
  assert.equal(server.status().length, 1);
  await a.until(() => a.closeReason !== undefined || undefined, 4000);
  assert.equal(a.closeReason, CloseReason.EXPIRED);
  assert.equal(server.status().length, 0);
});

// ---- TLS ------------------------------------------------------------------------------------

const serverCert = makeCertificate(dir);
const tlsMaterial: ZenohTls = {
  cert: readFileSync(serverCert.cert),
  key: readFileSync(serverCert.key),
  mtls: false,
};
const trust = { ca: readFileSync(serverCert.cert) };

test("tls: the handshake, a put and a subscriber over TLS; the link is listed as tls/", async () => {
  const { server, port, session } = await door("tls/127.0.0.1:0", { tls: tlsMaterial });
  assert.match(server.locators()[0]!, /^tls\/127\.0\.0\.1:\d+$/);
  const got: Sample[] = [];
  session.declareSubscriber("tls/**", (s) => void got.push(s));
  const c = await RawClient.connectTls(port, trust);
  opened.push(c);
  await c.handshake();
  c.sendFrame(
    (w) => encodePush(w, key("tls/a"), put("secret")),
    (w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("tls/back/**") }),
  );
  await c.until(() => got.length === 1 || undefined);
  assert.equal(got[0]?.payload.toString(), "secret");
  assert.match(server.status()[0]!.link, /^tls\/127\.0\.0\.1:\d+$/);
  await c.until(() => session.matchingStatus("tls/back/x", "subscribers") || undefined);
  await session.put("tls/back/x", "to you");
  const push = await c.waitNetwork((m) => m.kind === "push");
  assert.ok(push.kind === "push" && push.key.suffix === "tls/back/x");
});

test("tls: plain TCP to a TLS port is refused with a log line", async () => {
  const { logger, lines } = capturingLogger();
  const { port } = await door("tls/127.0.0.1:0", { tls: tlsMaterial, logger });
  const plain = await RawClient.connect(port);
  opened.push(plain);
  plain.sendBatch((w) => encodeInitSyn(w, { whatami: "client", zid: "CC" }));
  await plain.waitClosed();
  assert.equal(plain.transport.length, 0, "a zenoh message came back over plain TCP");
  await plain.until(() => lines.some((l) => /TLS handshake failed/.test(String(l.msg))) || undefined);
});

test("tls: with mutual TLS, a client without a certificate, or with one of another CA, is refused; a signed one is served", async () => {
  const good = makeClientCertificate(dir, "good");
  const other = makeClientCertificate(dir, "other");
  const { logger, lines } = capturingLogger();
  const { port, server } = await door("tls/127.0.0.1:0", {
    tls: { ...tlsMaterial, mtls: true, ca: readFileSync(good.ca) },
    logger,
  });
  for (const options of [trust, { ...trust, cert: readFileSync(other.cert), key: readFileSync(other.key) }]) {
    // TLS 1.3 ends the client's handshake before the server has checked its certificate: the
    // refusal shows as the connection closing without a zenoh answer.
    const c = await RawClient.connectTls(port, options).catch(() => undefined);
    if (c !== undefined) {
      opened.push(c);
      c.sendBatch((w) => encodeInitSyn(w, { whatami: "client", zid: "DD" }));
      await c.waitClosed();
      assert.equal(c.transport.length, 0);
    }
  }
  await new Promise((r) => setTimeout(r, 100));
  assert.ok(lines.filter((l) => /TLS handshake failed/.test(String(l.msg))).length >= 2, JSON.stringify(lines));
  assert.equal(server.status().length, 0);
  const c = await RawClient.connectTls(port, { ...trust, cert: readFileSync(good.cert), key: readFileSync(good.key) });
  opened.push(c);
  await c.handshake();
  assert.equal(server.status().length, 1);
});

test("tls: a plain TCP connection does not count against the sessions once refused", async () => {
  const { port, server } = await door("tls/127.0.0.1:0", { tls: tlsMaterial, limits: { maxSessionsPerAddress: 1 } });
  const s = connect(port, "127.0.0.1");
  s.on("error", () => {});
  await new Promise((r) => s.once("close", r).write(Buffer.from("not TLS at all\r\n")));
  const c = await RawClient.connectTls(port, trust);
  opened.push(c);
  await c.handshake();
  assert.equal(server.status().length, 1);
});

// ---- TLS configuration (the real command) -----------------------------------------------------

/** The port of a zest process's `tls/` locator. */
function tlsPort(stderr: string): number {
  const m = /zenoh tls\/127\.0\.0\.1:(\d+)/.exec(stderr);
  assert.ok(m, stderr);
  return Number(m[1]);
}

test("config: transport.link.tls (zenohd's names) serves tls/ endpoints", async () => {
  const tls = JSON.stringify({ listen_certificate: serverCert.cert, listen_private_key: serverCert.key });
  const z = await startZestProcess(["-l", "tls/127.0.0.1:0", "--cfg", `transport/link/tls:${tls}`]);
  opened.push({ close: () => z.stop() });
  const c = await RawClient.connectTls(tlsPort(z.stderr()), trust);
  opened.push(c);
  await c.handshake();
  assert.equal(c.closed, false);
});

test("config: without transport.link.tls, the router's certificate (--rest-tls-cert) serves tls/ endpoints", async () => {
  const z = await startZestProcess([
    "-l",
    "tls/127.0.0.1:0",
    "--rest-tls-cert",
    serverCert.cert,
    "--rest-tls-key",
    serverCert.key,
  ]);
  opened.push({ close: () => z.stop() });
  const c = await RawClient.connectTls(tlsPort(z.stderr()), trust);
  opened.push(c);
  await c.handshake();
  assert.equal(c.closed, false);
});

test("config: enable_mtls without root_ca_certificate, or a certificate without its key, is refused at start", async () => {
  for (const [tls, message] of [
    [
      { enable_mtls: true, listen_certificate: "a.pem", listen_private_key: "b.pem" },
      /enable_mtls needs root_ca_certificate/,
    ],
    [{ listen_certificate: "a.pem" }, /listen_certificate and listen_private_key go together/],
  ] as const) {
    const r = await runZestExpectingExit([
      "--rest-http-port",
      "none",
      "-l",
      "tls/127.0.0.1:0",
      "--cfg",
      `transport/link/tls:${JSON.stringify(tls)}`,
    ]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, message);
  }
});
