import assert from "node:assert/strict";
import { test } from "node:test";
import { ZestError } from "../../src/core/errors.js";
import {
  booleanOpt,
  intOpt,
  optionsObject,
  parseOptions,
  stringListOpt,
  stringOpt,
} from "../../src/storage/options.js";
import { jetstreamOptions, sqliteOptions } from "../../src/storage/volumes/descriptors.js";
import { influxdbOptions } from "../../src/storage/volumes/influxdb.js";

const schema = optionsObject({
  path: stringOpt("a file").optional(),
  flag: booleanOpt("a flag").default(false),
  count: intOpt("a count", 1, 10).optional(),
  servers: stringListOpt("servers").optional(),
});

const badInput = (re: RegExp) => (e: unknown) => e instanceof ZestError && e.kind === "bad_input" && re.test(e.message);

test("an unknown option is refused naming it, where it was given, and the closest known option", () => {
  assert.throws(
    () => parseOptions(schema, { pth: "/x" }, "volume v"),
    badInput(/^unknown option "pth" of volume v \(did you mean "path"\?\)$/),
  );
  // Too far from every known option to be a typo: the known options instead of a guess.
  assert.throws(
    () => parseOptions(schema, { token: "t" }, "volume v"),
    badInput(/^unknown option "token" of volume v \(known options: path, flag, count, servers\)$/),
  );
  assert.throws(
    () => parseOptions(jetstreamOptions.storage.schema, { bukcet: "b" }, "jetstream storage s"),
    badInput(/unknown option "bukcet" of jetstream storage s \(did you mean "bucket"\?\)/),
  );
  // Nested objects name the full path.
  assert.throws(
    () => parseOptions(influxdbOptions.volume.schema, { url: "http://h", private: { usrname: "u" } }, "volume v"),
    badInput(/^unknown option "private\.usrname" of volume v \(did you mean "username"\?\)$/),
  );
});

test("option names are data: a `__proto__` key is an unknown option like any other", () => {
  assert.throws(
    () => parseOptions(schema, JSON.parse('{"__proto__": {"path": "/x"}}') as Record<string, unknown>, "volume v"),
    badInput(/^unknown option "__proto__" of volume v/),
  );
});

test("a misspelled option is reported before the required option it was meant to be", () => {
  const required = optionsObject({ url: stringOpt("a URL") });
  assert.throws(() => parseOptions(required, { ur: "http://h" }, "volume v"), badInput(/unknown option "ur"/));
  assert.throws(() => parseOptions(required, {}, "volume v"), badInput(/^`url` of volume v is required$/));
});

test("strings stand for booleans and numbers (Variant B's properties), defaults fill in, null is absent", () => {
  assert.deepEqual(parseOptions(schema, { flag: "true", count: "7", path: null }, "v"), { flag: true, count: 7 });
  assert.deepEqual(parseOptions(schema, {}, "v"), { flag: false });
  assert.deepEqual(parseOptions(schema, { servers: " a, b ,," }, "v").servers, ["a", "b"]);
});

test("malformed and out-of-range values are refused naming the option and what it must be", () => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ flag: "yes" }, /^`flag` of v must be true or false \(got "yes"\)$/],
    [{ count: 0 }, /^`count` of v must be between 1 and 10 \(got 0\)$/],
    [{ count: 11 }, /`count` of v must be between 1 and 10/],
    [{ count: 1.5 }, /`count` of v must be between 1 and 10/],
    [{ count: "1e3" }, /`count` of v must be between 1 and 10/],
    [{ path: 42 }, /^`path` of v must be a string \(got 42\)$/],
    [{ path: "x".repeat(100), count: {} }, /`count` of v must be between 1 and 10 \(got \{\}\)/],
    [{ servers: [] }, /`servers` of v must not be empty/],
    [{ servers: [1] }, /`servers` of v must be a list of strings/],
  ];
  for (const [options, re] of cases)
    assert.throws(() => parseOptions(schema, options, "v"), badInput(re), JSON.stringify(options));
});

test("oversized strings and lists are refused before any other check", () => {
  const long = "x".repeat(4097);
  assert.throws(
    () => parseOptions(schema, { path: long }, "v"),
    badInput(/`path` of v must be at most 4096 characters long/),
  );
  assert.equal(parseOptions(schema, { path: "x".repeat(4096) }, "v").path?.length, 4096);
  assert.throws(
    () => parseOptions(sqliteOptions.storage.schema, { table: long }, "s"),
    badInput(/^`table` of s must be at most 4096 characters long$/),
  );
  assert.throws(
    () => parseOptions(schema, { servers: Array.from({ length: 65 }, (_, i) => `s${i}`) }, "v"),
    badInput(/`servers` of v must hold at most 64 items/),
  );
  assert.throws(
    () => parseOptions(schema, { servers: [long] }, "v"),
    badInput(/`servers.0` of v must be at most 4096 characters long/),
  );
});

test("an oversized value is shown cut short in the message", () => {
  assert.throws(
    () => parseOptions(schema, { path: 7, flag: "x".repeat(10_000) }, "v"),
    (e: unknown) => e instanceof ZestError && e.message.length < 200,
  );
});

test("the sqlite driver declares its path or url as the file it reaches; url and path together are refused", () => {
  const reaches = (o: Record<string, unknown>) =>
    sqliteOptions.volume.reaches!(parseOptions(sqliteOptions.volume.schema, o, "volume v"));
  assert.deepEqual(reaches({ path: "/data/a.db" }).files, ["/data/a.db"]);
  assert.deepEqual(reaches({ url: "sqlite3:///data/b%20c.db" }).files, ["/data/b c.db"]);
  assert.deepEqual(reaches({}).files, []);
  assert.throws(
    () => parseOptions(sqliteOptions.volume.schema, { path: "/a", url: "sqlite3:///b" }, "volume v"),
    badInput(/give either `url` or `path`, not both/),
  );
  assert.throws(
    () => parseOptions(sqliteOptions.volume.schema, { url: "sqlite3://elsewhere/b.db" }, "volume v"),
    badInput(/`url` of volume v must look like sqlite3:\/\/\/absolute\/path\.db/),
  );
});

test("the jetstream driver declares every server as a host, a bare host:port and the NATS default port included", () => {
  const o = parseOptions(
    jetstreamOptions.volume.schema,
    { servers: "nats://A.example:4223, b.example:5000,tls://c.example" },
    "volume v",
  );
  assert.deepEqual(jetstreamOptions.volume.reaches!(o).hosts, [
    { hostname: "a.example", port: "4223" },
    { hostname: "b.example", port: "5000" },
    { hostname: "c.example", port: "4222" },
  ]);
});
