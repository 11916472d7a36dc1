// Builds the grid page into ../assets/grid/: its script (grid.js), the small script that
// paints the first rows before it (first.js, see src/first.ts), one stylesheet (grid.css)
// and the licences of every package bundled into them (grid.licenses.txt). The output is
// deterministic for a given lockfile, so CI rebuilds it and fails when it differs from what
// is committed (see .ci/run); `cargo build` embeds the committed files and never needs Node.
// The build fails when the script and stylesheet together pass the page's size budget.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

const OUT = "../assets/grid";
/** JS plus CSS, gzipped (issue 23's goal). */
const BUDGET_BYTES = 350 * 1024;

const define = { "process.env.NODE_ENV": '"production"', "globalThis.__DEV__": "false" };

// The first paint sends the page's first two requests itself, and the page takes their answers
// only if the documents are the very ones its Apollo Client sends (with `__typename` added to
// every selection by the cache); so they are printed here, by Apollo's own functions, from
// queries.ts, rather than written twice.
const printer = await esbuild.build({
  stdin: {
    contents: `
      import { print } from "graphql";
      import { addTypenameToDocument } from "@apollo/client/utilities";
      import { ISSUES, PROJECT, VIEW_ISSUES } from "./queries";
      export default Object.fromEntries(
        [PROJECT, ISSUES, VIEW_ISSUES].map((document) => [
          document.definitions.find((d) => d.kind === "OperationDefinition").name.value,
          print(addTypenameToDocument(document)),
        ]),
      );`,
    resolveDir: "src",
    loader: "ts",
  },
  bundle: true,
  platform: "node",
  format: "esm",
  write: false,
  define,
  logLevel: "warning",
});
const printed = printer.outputFiles[0].text;
const documents = (await import(`data:text/javascript;base64,${Buffer.from(printed).toString("base64")}`)).default;

const result = await esbuild.build({
  entryPoints: { grid: "src/main.tsx", first: "src/first.ts" },
  bundle: true,
  minify: true,
  format: "iife",
  target: ["chrome110", "firefox110", "safari16"],
  outdir: OUT,
  jsx: "automatic",
  // The licences travel in grid.licenses.txt, whole, rather than as scattered comments.
  legalComments: "none",
  banner: { js: "/*! gridgate's grid page. Third-party licences: /assets/grid.licenses.txt */" },
  define: { ...define, __FIRST_DOCUMENTS__: JSON.stringify(documents) },
  charset: "utf8",
  metafile: true,
  logLevel: "warning",
});

// Every package a byte of the bundle came from, with its licence text.
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (!match || packages.has(match[1])) continue;
  const dir = match[1];
  const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
  const file = readdirSync(dir).find((name) => /^(licen[cs]e|copying)/i.test(name));
  const text = file ? readFileSync(path.join(dir, file), "utf8").trim() : `(no licence file; package.json says ${manifest.license})`;
  packages.set(dir, { name: manifest.name, version: manifest.version, license: manifest.license, text });
}
const notices = [...packages.values()]
  .sort((a, b) => a.name.localeCompare(b.name))
  .map((p) => `${p.name}@${p.version} (${p.license})\n\n${p.text}\n`)
  .join(`\n${"-".repeat(72)}\n\n`);
writeFileSync(
  path.join(OUT, "grid.licenses.txt"),
  `The grid page (grid.js, first.js, grid.css) bundles these packages, under these licences.\n\n${notices}`,
);

const files = ["grid.js", "first.js", "grid.css"];
const gzipped = files.map((name) => {
  const file = path.join(OUT, name);
  return existsSync(file) ? gzipSync(readFileSync(file), { level: 9 }).length : 0;
});
const total = gzipped.reduce((a, b) => a + b, 0);
console.log(`${files.map((name, i) => `${name} ${gzipped[i]} B`).join(" + ")} gzipped = ${(total / 1024).toFixed(1)} KiB (budget ${BUDGET_BYTES / 1024} KiB)`);
if (total > BUDGET_BYTES) {
  console.error("the grid page is over its size budget");
  process.exit(1);
}
