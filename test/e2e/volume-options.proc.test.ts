import assert from "node:assert/strict";
import { test } from "node:test";
import { runZestExpectingExit } from "../support/zest-process.js";

const SM = "plugins/storage_manager";

/** A misspelled option per driver, on a volume and on a storage, in the configuration. */
const CASES: Array<{ what: string; cfg: string[]; message: RegExp }> = [
  {
    what: "memory volume",
    cfg: [`${SM}/volumes/m:{backend:"memory",quto:1000}`],
    message: /unknown option "quto" of volume m \(did you mean "quota"\?\)/,
  },
  {
    what: "sqlite volume",
    cfg: [`${SM}/volumes/db:{backend:"sqlite",pth:"/tmp/never.db"}`],
    message: /unknown option "pth" of volume db \(did you mean "path"\?\)/,
  },
  {
    what: "influxdb volume",
    cfg: [`${SM}/volumes/ts:{backend:"influxdb",ur:"http://127.0.0.1:1"}`],
    message: /unknown option "ur" of volume ts \(did you mean "url"\?\)/,
  },
  {
    what: "jetstream volume",
    cfg: [`${SM}/volumes/js:{backend:"jetstream",server:"nats://127.0.0.1:1"}`],
    message: /unknown option "server" of volume js \(did you mean "servers"\?\)/,
  },
  {
    what: "memory storage",
    cfg: [`${SM}/storages/s:{key_expr:"s/**",volume:{id:"memory",quot:1000}}`],
    message: /unknown option "quot" of memory storage s \(did you mean "quota"\?\)/,
  },
  {
    what: "sqlite storage",
    cfg: [`${SM}/storages/s:{key_expr:"s/**",volume:{id:"sqlite",tabel:"t",path:"/tmp/never.db"}}`],
    message: /unknown option "tabel" of sqlite storage s \(did you mean "table"\?\)/,
  },
  {
    // Its volume cannot be reached: the storage's options are checked before it is opened.
    what: "influxdb storage",
    cfg: [
      `${SM}/volumes/ts:{backend:"influxdb",url:"http://127.0.0.1:1"}`,
      `${SM}/storages/s:{key_expr:"s/**",volume:{id:"ts",dbb:"d"}}`,
    ],
    message: /unknown option "dbb" of influxdb storage s \(did you mean "db"\?\)/,
  },
  {
    what: "jetstream storage",
    cfg: [`${SM}/storages/s:{key_expr:"s/**",volume:{id:"jetstream",buckt:"b"}}`],
    message: /unknown option "buckt" of jetstream storage s \(did you mean "bucket"\?\)/,
  },
];

for (const c of CASES)
  test(`a misspelled ${c.what} option in the configuration: zest exits 2 with one line naming it`, async () => {
    const r = await runZestExpectingExit([
      "--rest-http-port",
      "127.0.0.1:0",
      ...c.cfg.flatMap((cfg) => ["--cfg", cfg]),
    ]);
    assert.equal(r.code, 2, r.stderr);
    // One error line (a volume that cannot be reached may log its warning before it).
    const errors = r.stderr.split("\n").filter((line) => line.startsWith("zest: "));
    assert.equal(errors.length, 1, r.stderr);
    assert.match(errors[0]!, c.message);
  });
