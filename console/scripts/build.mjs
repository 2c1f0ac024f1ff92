// Bundles the console into dist/: one script, one stylesheet, index.html. Everything the page
// loads comes from this origin (no fonts, no CDNs), as the server's Content-Security-Policy
// demands.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const dist = join(here, "dist");
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });
await build({
  entryPoints: [join(here, "src", "main.tsx")],
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  sourcemap: false,
  jsx: "automatic",
  jsxImportSource: "preact",
  outfile: join(dist, "app.js"),
  logLevel: "warning",
});
copyFileSync(join(here, "src", "index.html"), join(dist, "index.html"));
copyFileSync(join(here, "src", "app.css"), join(dist, "app.css"));
console.log("console built into dist/");
