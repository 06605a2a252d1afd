// Baseline for `https`, the share of Node's HTTP/2 server: a bare `http2.createSecureServer` with
// `allowHTTP1: true` (as zest's TLS port has by default) and the same certificate, so HTTP/1.1
// clients (autocannon) go through the http2 server's fallback to node:http. Modes and arguments
// as https.mjs (tls-answer.mjs).
import { createSecureServer } from "node:http2";
import { answer, baselineArgs, serve } from "./tls-answer.mjs";

const { mode, tls, body } = baselineArgs(process.argv.slice(2));
serve(createSecureServer({ ...tls, allowHTTP1: true }, answer(mode, body)), `h2 (allowHTTP1) ${mode} baseline`);
