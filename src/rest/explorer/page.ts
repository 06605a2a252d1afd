/**
 * The explorer page's markup and style (docs/explorer.md). No inline script or style: the
 * Content-Security-Policy forbids both, and the page loads them from `/?_explorer=...`.
 */

export const EXPLORER_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>zest explorer</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/?_explorer=app.css">
<script type="module" src="/?_explorer=app.js"></script>
</head>
<body>
<header class="top">
  <h1>zest <span>explorer</span></h1>
  <nav aria-label="Sections"><a href="#keys">Keys</a> <a href="#admin">Admin</a></nav>
  <span id="router" class="muted"></span>
  <span id="live" class="live" role="status" data-state="connecting">connecting</span>
</header>
<main>
<section id="keys" aria-labelledby="keys-title">
  <h2 id="keys-title" class="sr-only">Keys</h2>
  <form id="select-form" class="row">
    <label for="selector">Key expression</label>
    <input id="selector" name="selector" value="**" autocomplete="off" autocapitalize="off" spellcheck="false">
    <button type="submit">Run</button>
  </form>
  <p id="summary" class="muted" role="status"></p>
  <div class="split">
    <div class="pane tree-pane">
      <ul id="tree" role="tree" aria-label="Keys" aria-describedby="tree-help"></ul>
      <p id="tree-help" class="muted small">Arrow keys move and expand, Enter shows a key.</p>
    </div>
    <div class="pane">
      <section id="detail" aria-labelledby="detail-title">
        <h2 id="detail-title">Select a key</h2>
        <div id="detail-body"><p class="muted">The value, its encoding, size and timestamp show here.</p></div>
      </section>
      <form id="write-form" class="stack" aria-labelledby="write-title">
        <h2 id="write-title">Write a key</h2>
        <label for="w-key">Key</label>
        <input id="w-key" name="key" required autocomplete="off" autocapitalize="off" spellcheck="false">
        <label for="w-enc">Encoding</label>
        <input id="w-enc" name="encoding" list="encodings" value="text/plain" autocomplete="off" autocapitalize="off" spellcheck="false">
        <datalist id="encodings"><option value="text/plain"><option value="application/json"><option value="application/integer"><option value="application/float"><option value="application/xml"><option value="application/octet-stream"></datalist>
        <label for="w-value">Value</label>
        <textarea id="w-value" name="value" rows="4" spellcheck="false"></textarea>
        <div class="row"><button type="submit">Put</button><button type="button" id="w-delete" class="danger">Delete</button></div>
        <p id="w-status" role="status" class="small"></p>
      </form>
    </div>
  </div>
</section>
<section id="admin" aria-labelledby="admin-title">
  <div class="row"><h2 id="admin-title">Admin space</h2><button type="button" id="admin-refresh">Refresh</button></div>
  <p id="admin-status" role="status" class="small"></p>
  <h3>Routers</h3>
  <div class="scroll"><table id="routers"><thead><tr><th scope="col">Router</th><th scope="col">Version</th><th scope="col">Locators</th><th scope="col">Fabric</th><th scope="col">Peers</th></tr></thead><tbody></tbody></table></div>
  <h3>Storages</h3>
  <div class="scroll"><table id="storages"><thead><tr><th scope="col">Router</th><th scope="col">Name</th><th scope="col">Key expression</th><th scope="col">Volume</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody></tbody></table></div>
  <form id="storage-form" class="stack admin-write" aria-labelledby="storage-form-title" hidden>
    <h4 id="storage-form-title">Create a storage</h4>
    <label for="s-router">Router</label><select id="s-router" name="router"></select>
    <label for="s-name">Name</label><input id="s-name" name="name" required autocomplete="off" autocapitalize="off" spellcheck="false">
    <label for="s-ke">Key expression</label><input id="s-ke" name="key_expr" required autocomplete="off" autocapitalize="off" spellcheck="false">
    <label for="s-volume">Volume</label><input id="s-volume" name="volume" list="volume-names" value="memory" autocomplete="off" autocapitalize="off" spellcheck="false">
    <datalist id="volume-names"></datalist>
    <label for="s-options">More options (JSON object, optional)</label><input id="s-options" name="options" autocomplete="off" autocapitalize="off" spellcheck="false">
    <div class="row"><button type="submit">Create storage</button></div>
  </form>
  <h3>Volumes</h3>
  <div class="scroll"><table id="volumes"><thead><tr><th scope="col">Router</th><th scope="col">Name</th><th scope="col">Configuration</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody></tbody></table></div>
  <form id="volume-form" class="stack admin-write" aria-labelledby="volume-form-title" hidden>
    <h4 id="volume-form-title">Create a volume</h4>
    <label for="v-router">Router</label><select id="v-router" name="router"></select>
    <label for="v-name">Name</label><input id="v-name" name="name" required autocomplete="off" autocapitalize="off" spellcheck="false">
    <label for="v-config">Configuration (JSON5)</label><input id="v-config" name="config" required placeholder='{backend: "influxdb", url: "http://127.0.0.1:8086"}' autocomplete="off" autocapitalize="off" spellcheck="false">
    <div class="row"><button type="submit">Create volume</button></div>
  </form>
</section>
</main>
</body>
</html>
`;

export const EXPLORER_CSS = `:root {
  color-scheme: light dark;
  --bg: #fbfbfa; --fg: #1d232a; --muted: #5d6975; --line: #d8dde2; --panel: #fff;
  --accent: #0b6bcb; --accent-bg: #e5f0fb; --danger: #b42318; --ok: #1a7f37;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #15191d; --fg: #e3e7eb; --muted: #98a4b0; --line: #313a43; --panel: #1c2126; --accent: #5aa9f0; --accent-bg: #1d3349; --danger: #ff7b72; --ok: #56d364; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); }
h1 { font-size: 1.15rem; margin: 0; }
h1 span { font-weight: 400; color: var(--muted); }
h2 { font-size: 1.05rem; margin: 0 0 .5rem; }
h3 { font-size: .95rem; margin: 1.25rem 0 .4rem; }
h4 { font-size: .9rem; margin: .25rem 0; }
a { color: var(--accent); }
.top { display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: baseline; padding: .6rem 1rem; border-bottom: 1px solid var(--line); background: var(--panel); }
.top nav a { margin-right: .6rem; }
.live { margin-left: auto; font-size: .85rem; color: var(--muted); }
.live::before { content: ""; display: inline-block; width: .55rem; height: .55rem; border-radius: 50%; margin-right: .35rem; background: var(--muted); }
.live[data-state="live"]::before { background: var(--ok); }
.live[data-state="error"]::before { background: var(--danger); }
main { padding: .75rem 1rem 2rem; max-width: 1400px; margin: 0 auto; }
section + section { margin-top: 1.5rem; }
.muted { color: var(--muted); }
.small { font-size: .85rem; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.row { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.stack { display: grid; gap: .3rem; margin-top: 1rem; }
.stack label { font-size: .85rem; color: var(--muted); }
input, select, textarea, button { font: inherit; color: inherit; }
input, select, textarea { width: 100%; padding: .35rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--panel); }
textarea { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85rem; resize: vertical; }
#select-form input { flex: 1 1 12rem; width: auto; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
#select-form label { font-weight: 600; }
button { padding: .35rem .8rem; border: 1px solid var(--accent); border-radius: 6px; background: var(--accent); color: #fff; cursor: pointer; }
button.secondary, #admin-refresh { background: transparent; color: var(--accent); }
button.danger { background: transparent; border-color: var(--danger); color: var(--danger); }
button.danger[data-armed] { background: var(--danger); color: #fff; }
:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.split { display: grid; gap: 1rem; grid-template-columns: minmax(0, 2fr) minmax(0, 3fr); align-items: start; }
.pane { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: .75rem; min-width: 0; }
.tree-pane { max-height: 75vh; overflow: auto; }
#tree { list-style: none; margin: 0; padding: 0; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85rem; }
#tree li { display: flex; gap: .4rem; align-items: baseline; padding: .15rem .3rem; border-radius: 4px; cursor: pointer; white-space: nowrap; padding-left: calc(var(--level, 1) * 1rem - .7rem); }
#tree li:hover { background: var(--accent-bg); }
#tree li[aria-selected="true"] { background: var(--accent-bg); box-shadow: inset 3px 0 var(--accent); }
#tree .twisty { width: .8rem; flex: none; color: var(--muted); }
#tree .count { flex: none; font-size: .75rem; padding: 0 .4rem; border-radius: 9px; background: var(--line); color: var(--fg); }
#tree .preview { color: var(--muted); overflow: hidden; text-overflow: ellipsis; min-width: 0; }
#tree .ttl { flex: none; font-size: .75rem; padding: 0 .4rem; border-radius: 9px; border: 1px solid var(--line); color: var(--muted); font-variant-numeric: tabular-nums; }
#tree li.more { color: var(--accent); }
dl.meta { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .15rem .8rem; margin: 0 0 .6rem; font-size: .85rem; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
pre.value { margin: 0; padding: .6rem; max-height: 50vh; overflow: auto; background: var(--bg); border: 1px solid var(--line); border-radius: 6px; font-size: .82rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.value-label { font-size: .8rem; color: var(--muted); margin: .6rem 0 .2rem; }
.key-title { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.error { color: var(--danger); }
.ok { color: var(--ok); }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: .85rem; background: var(--panel); }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
td code { overflow-wrap: anywhere; }
form.admin-write { max-width: 40rem; grid-template-columns: max-content minmax(0, 1fr); align-items: center; gap: .35rem .75rem; }
form.admin-write h4, form.admin-write .row { grid-column: 1 / -1; }
[hidden] { display: none !important; }
@media (max-width: 760px) {
  :root { font-size: 16px; }
  main { padding: .5rem .6rem 2rem; }
  .split { grid-template-columns: minmax(0, 1fr); }
  .tree-pane { max-height: 55vh; }
  form.admin-write { grid-template-columns: minmax(0, 1fr); }
  .top { padding: .5rem .6rem; }
  th, td { padding: .3rem; }
}
`;
