// Runs the web grid's unit tests (test/*.test.ts): bundles each with esbuild, as the page is
// built, and runs them with Node's test runner.
//
//   npm test
import { build } from "esbuild";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";

const here = new URL(".", import.meta.url).pathname;
const out = mkdtempSync(join(tmpdir(), "gridgate-web-test-"));
try {
  const tests = readdirSync(here).filter((name) => name.endsWith(".test.ts"));
  await build({
    entryPoints: tests.map((name) => join(here, name)),
    bundle: true,
    platform: "node",
    format: "esm",
    outdir: out,
    outExtension: { ".js": ".mjs" },
    define: { "process.env.NODE_ENV": '"production"', "globalThis.__DEV__": "false" },
    logLevel: "warning",
  });
  const files = readdirSync(out).map((name) => join(out, name));
  const run = spawnSync(process.execPath, ["--test", ...files], { stdio: "inherit" });
  process.exitCode = run.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
