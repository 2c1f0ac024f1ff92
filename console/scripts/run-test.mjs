// Runs one TypeScript test file with node's test runner: bundled by esbuild into a temporary
// directory (npm packages stay external and resolve from console/node_modules through a link).
import { build } from "esbuild";
import { spawnSync } from "node:child_process";
import { mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node scripts/run-test.mjs tests/NAME.test.ts...");
  process.exit(2);
}
const out = mkdtempSync(join(process.env.TEST_TMPDIR ?? tmpdir(), "console-test-"));
symlinkSync(join(here, "node_modules"), join(out, "node_modules"));
const outputs = [];
for (const file of files) {
  const outfile = join(out, basename(file).replace(/\.ts$/, ".mjs"));
  await build({
    entryPoints: [resolve(here, file)],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node18",
    packages: "external",
    outfile,
    logLevel: "warning",
  });
  outputs.push(outfile);
}
const run = spawnSync(process.execPath, ["--test", "--test-reporter=spec", ...outputs], { stdio: "inherit" });
process.exit(run.status ?? 1);
