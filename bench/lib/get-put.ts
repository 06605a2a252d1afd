/**
 * GET one key and PUT 100 bytes on a subject server against a baseline server (or one per
 * request kind), each pair measured in alternation; the result's ratio is the lower of the two.
 */
import { fmtInt, fmtRatio } from "./format.js";
import {
  compare,
  cpuPerReq,
  loadFigures,
  loadNotes,
  PAIRED_ROUNDS,
  pairedRatio,
  type RequestSpec,
  roundsNote,
} from "./load.js";
import type { ServerProcess } from "./proc.js";
import { TEXT_100 } from "./payloads.js";
import type { BenchResult } from "./types.js";

export interface GetPutSides {
  /** Figure prefix and label of each side, e.g. `{ prefix: "acl", label: "ACL" }`. */
  subject: { prefix: string; label: string; server: ServerProcess };
  baseline: { prefix: string; label: string; get: ServerProcess; put: ServerProcess };
  /** Extra request headers (credentials). */
  headers?: Record<string, string>;
}

export async function compareGetPut(name: string, target: number, sides: GetPutSides): Promise<BenchResult> {
  const headers = sides.headers ?? {};
  const get: RequestSpec = { path: "/bench/one", headers };
  const put: RequestSpec = {
    path: "/bench/put",
    method: "PUT",
    headers: { ...headers, "content-type": "text/plain" },
    body: TEXT_100,
  };
  const { subject: s, baseline: b } = sides;
  const [sg, bg] = await compare(
    [
      { server: s.server, spec: get },
      { server: b.get, spec: get },
    ],
    PAIRED_ROUNDS,
  );
  const [sp, bp] = await compare(
    [
      { server: s.server, spec: put },
      { server: b.put, spec: put },
    ],
    PAIRED_ROUNDS,
  );
  const getRatio = pairedRatio(sg, bg);
  const putRatio = pairedRatio(sp, bp);
  const ratio = Math.min(getRatio, putRatio);
  return {
    name,
    figures: {
      ...loadFigures(`${s.prefix}Get`, sg),
      ...loadFigures(`${b.prefix}Get`, bg),
      ...loadFigures(`${s.prefix}Put`, sp),
      ...loadFigures(`${b.prefix}Put`, bp),
      getRatio,
      putRatio,
      // Server CPU per response, baseline over subject: the same ratios from CPU accounting.
      getCpuPerReqRatio: cpuPerReq(bg) / cpuPerReq(sg),
      putCpuPerReqRatio: cpuPerReq(bp) / cpuPerReq(sp),
    },
    ratio,
    target: `>= ${target}x (the lower of GET and PUT)`,
    pass: ratio >= target,
    summary: `GET ${s.label} ${fmtInt(sg.reqPerSec)} / ${b.label} ${fmtInt(bg.reqPerSec)} req/s = ${fmtRatio(getRatio)} (${roundsNote(sg, bg)}); PUT ${s.label} ${fmtInt(sp.reqPerSec)} / ${b.label} ${fmtInt(bp.reqPerSec)} req/s = ${fmtRatio(putRatio)} (${roundsNote(sp, bp)})`,
    interferencePct: Math.max(...[sg, bg, sp, bp].flatMap((f) => [f.otherCpuPct, f.stealPct])),
    notes: [
      ...loadNotes(`${s.label} GET`, sg),
      ...loadNotes(`${b.label} GET`, bg),
      ...loadNotes(`${s.label} PUT`, sp),
      ...loadNotes(`${b.label} PUT`, bp),
    ],
  };
}
