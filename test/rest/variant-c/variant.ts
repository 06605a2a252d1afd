/**
 * A REST variant for the tests (docs/rest-gateway.md, "Variants"): one file, registered with one
 * line (`variants: [variantC]`), that proves a variant needs no edit to zest. It is Variant A's
 * face with three differences a client can see: writes answer 201, there is no SSE (an
 * `Accept: text/event-stream` GET is an ordinary GET) and no explorer page at `/`.
 */
import type { RestCodec, RestVariant } from "../../../src/rest/codec.js";
import { codecA, variantA } from "../../../src/rest/variant-a.js";

const { sseEvent: _sse, sseEventExpires: _sseExpires, ...noSse } = codecA;

const codecC: RestCodec = { ...noSse, writeStatus: 201, explorer: false };

export const variantC: RestVariant = {
  name: "c",
  description: "a test variant",
  codec: codecC,
  admin: variantA.admin,
  openApi: { ...variantA.openApi, title: "zest REST API, Variant C (tests)", writeStatus: "201", sse: false },
};
