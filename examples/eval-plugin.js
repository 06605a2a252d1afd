// An eval: a queryable that computes its answer on demand. Load it with
//   zest -P examples/eval-plugin.js
// then: curl 'http://localhost:8000/demo/example/*eval?(name=Bob)'
// It answers `Eval from <name>` on demo/example/zest-eval, with no timestamp ("time": "None").
// A GET with a body passes it as the query payload: `curl -X GET -d Alice <url>` answers `Eval from Alice`.

/** @param {import("zest").PluginContext} ctx */
export default function evalPlugin({ session, config }) {
  const key =
    (config && typeof config === "object" && "key_expr" in config && String(config.key_expr)) ||
    "demo/example/zest-eval";
  const queryable = session.declareQueryable(key, (query) => {
    const name = query.parameters.get("name") || query.payload?.toString("utf8") || "zest!";
    query.reply(key, `Eval from ${name}`, { encoding: "text/plain" });
  });
  return { close: () => queryable.undeclare() };
}
