// Generates the TypeScript message and service types from proto/ with protoc-gen-es, into
// src/gen/ (not committed: proto/ is the one source). Uses Debian's protoc, the one Bazel uses.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const protoRoot = join(here, "..", "proto");
const out = join(here, "src", "gen");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const files = readdirSync(join(protoRoot, "dcl", "v1"))
  .filter((f) => f.endsWith(".proto"))
  .map((f) => `dcl/v1/${f}`);
execFileSync(
  "/usr/bin/protoc",
  [
    `--plugin=protoc-gen-es=${join(here, "node_modules", ".bin", "protoc-gen-es")}`,
    `--es_out=${out}`,
    "--es_opt=target=ts,import_extension=none",
    `-I${protoRoot}`,
    "-I/usr/include",
    "google/rpc/status.proto",
    ...files,
  ],
  { stdio: "inherit" },
);
console.log(`generated ${files.length + 1} files into src/gen/`);
