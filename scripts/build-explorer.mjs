// Bundles the explorer page's script (src/rest/explorer/client/, browser code) into the one asset
// the router serves as /?_explorer=app.js: dist/rest/explorer/app.js (docs/explorer.md, "Assets").
// esbuild only bundles; `tsc -p tsconfig.explorer.json` type-checks the same files with the DOM
// library, apart from the server code. Part of `npm run build` (and so of `prepare`).
import { build } from "esbuild";

await build({
  entryPoints: ["src/rest/explorer/client/main.ts"],
  outfile: "dist/rest/explorer/app.js",
  bundle: true,
  format: "esm",
  target: "es2022",
  platform: "browser",
  charset: "utf8",
  legalComments: "none",
  logLevel: "warning",
});
