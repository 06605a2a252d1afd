import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { repoPath } from "../support/repo.js";

/**
 * The Markdown pages whose links are checked: the front page, every docs page (the index
 * included), and the benchmark pages.
 */
function pages(): string[] {
  const inDir = (dir: string) =>
    readdirSync(repoPath(dir))
      .filter((name) => name.endsWith(".md"))
      .map((name) => join(dir, name));
  return ["README.md", "bench/README.md", ...inDir("docs"), ...inDir("bench/results")];
}

/** A heading's anchor as GitHub derives it: lower case, punctuation dropped, spaces to `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

const LINK = /\]\(([^)\s]+)\)|<img [^>]*src="([^"]+)"/g;
const MENTION = /(?<![\w/.-])((?:docs|bench)\/[\w./-]*\.md)\b/g;

/**
 * The dead links of one page, as "target (why)": relative Markdown links and images resolved
 * from the page's folder, `#anchors` against the headings of the page they name, and plain
 * mentions of `docs/….md` or `bench/….md` resolved from the repository root.
 */
function deadLinks(
  page: string,
  text: string,
  exists: (path: string) => boolean,
  readPage: (path: string) => string,
): string[] {
  const dead: string[] = [];
  const fence = /^```[\s\S]*?^```/gm;
  const prose = text.replace(fence, "");
  for (const match of prose.matchAll(LINK)) {
    const target = match[1] ?? match[2] ?? "";
    if (/^[a-z]+:/i.test(target)) continue; // http:, https:, mailto:
    const [path = "", anchor] = target.split("#");
    const file = path === "" ? page : join(dirname(page), path);
    if (!exists(file)) {
      dead.push(`${target} (no file ${file})`);
      continue;
    }
    if (anchor !== undefined && file.endsWith(".md")) {
      const headings = readPage(file)
        .replace(fence, "")
        .split("\n")
        .filter((line) => line.startsWith("#"))
        .map((line) => slug(line.replace(/^#+/, "")));
      if (!headings.includes(anchor)) dead.push(`${target} (no heading #${anchor} in ${file})`);
    }
  }
  for (const match of prose.matchAll(MENTION)) {
    const path = match[1] ?? "";
    if (!exists(path)) dead.push(`${path} (no such page)`);
  }
  return dead;
}

const onDisk = (path: string) => existsSync(repoPath(path));
const readOnDisk = (path: string) => readFileSync(repoPath(path), "utf8");

test("every relative link and docs/….md mention in README.md, docs/ and bench/ names a file that exists", () => {
  const checked = pages();
  assert.ok(checked.includes("docs/README.md"), "docs/README.md, the index of the docs pages, exists");
  const dead = checked.flatMap((page) =>
    deadLinks(page, readOnDisk(page), onDisk, readOnDisk).map((link) => `${page}: ${link}`),
  );
  assert.deepEqual(dead, []);
});

test("the docs index lists the pages the README's table points to", () => {
  const index = readOnDisk("docs/README.md");
  const readme = readOnDisk("README.md");
  const fromReadme = [...readme.matchAll(/\]\(docs\/([\w-]+\.md)\)/g)].map((m) => m[1] ?? "");
  assert.ok(fromReadme.length > 10, `the README links its docs pages (found ${fromReadme.length})`);
  for (const page of new Set(fromReadme)) {
    if (page === "README.md") continue;
    assert.ok(index.includes(`](${page})`), `docs/README.md lists ${page}`);
  }
});

test("the link check reports a dead file, a dead anchor and a dead mention, and passes live ones", () => {
  const files = new Map([
    ["docs/a.md", "# A page\n\n## Some section\n"],
    ["docs/README.md", ""],
  ]);
  const exists = (path: string) => files.has(path);
  const read = (path: string) => files.get(path) ?? "";
  const text = [
    "[ok](a.md) [ok anchor](a.md#some-section) [web](https://example.com/x.md) see docs/a.md",
    "[gone](b.md) [bad anchor](a.md#nowhere) see docs/c.md",
    "```\n[in a fence](fenced.md)\n```",
  ].join("\n");
  assert.deepEqual(deadLinks("docs/README.md", text, exists, read), [
    "b.md (no file docs/b.md)",
    "a.md#nowhere (no heading #nowhere in docs/a.md)",
    "docs/c.md (no such page)",
  ]);
});
