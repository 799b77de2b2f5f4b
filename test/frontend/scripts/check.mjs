// The frontend check: what a Relay app and a graphql-codegen app see of the
// gateway's schema. Runs every step even when one fails, so one run reports
// everything, then prints a summary naming each step that failed.
//
//   1. relay-compiler compiles relay/ (zero errors).
//   2. graphql-codegen's client preset compiles operations/ (zero errors).
//
// Run it with `make frontend-check` from the repository root, or
// `npm run check` here after `npm ci`.
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
process.chdir(here);

// The schema is named once, in relay.config.json; codegen.ts reads it there.
const relayConfig = JSON.parse(readFileSync("relay.config.json", "utf8"));
const schemaFile = path.resolve(relayConfig.schema);
const relayOut = path.resolve(relayConfig.artifactDirectory);
const codegenOut = path.resolve("out/codegen");

const results = [];
async function step(name, fn) {
  console.log(`\n== ${name}`);
  const started = Date.now();
  let ok;
  try {
    ok = await fn();
  } catch (err) {
    console.log(`  ✖ ${err.stack ?? err}`);
    ok = false;
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  const status = ok === "skipped" ? "skipped" : ok ? "ok" : "FAILED";
  results.push({ name, status, secs });
  console.log(`  ${status} (${secs}s)`);
  return ok === true;
}

function run(cmd, args) {
  const r = spawnSync(path.join("node_modules", ".bin", cmd), args, { stdio: "inherit" });
  if (r.error) throw r.error;
  return r.status === 0;
}

function tsFiles(dir) {
  try {
    return readdirSync(dir)
      .filter((f) => f.endsWith(".ts"))
      .map((f) => path.join(dir, f));
  } catch {
    return [];
  }
}

console.log(`frontend check against ${path.relative(process.cwd(), schemaFile)}`);

// Generated files are output only: start from nothing, so an artifact of a
// deleted operation cannot linger.
rmSync("out", { recursive: true, force: true });
mkdirSync(relayOut, { recursive: true });

const stale = (dir) =>
  `\n  The operations in test/frontend/${dir}/ do not compile against the schema. If the schema change is\n` +
  `  intended, update them as test/frontend/README.md says ("When the schema changes").`;

await step("relay-compiler: relay/*.ts → out/relay", () => {
  const ok = run("relay-compiler", ["relay.config.json"]);
  if (!ok) console.log(stale("relay"));
  return ok;
});

await step("graphql-codegen client preset: operations/*.graphql → out/codegen", () => {
  const ok = run("graphql-codegen", ["--config", "codegen.ts"]);
  if (!ok) console.log(stale("operations"));
  return ok;
});

const count = (status) => results.filter((r) => r.status === status).length;
console.log("\n== summary");
for (const r of results) console.log(`  ${r.status.padEnd(7)} ${r.name} (${r.secs}s)`);
const skipped = count("skipped") > 0 ? `, ${count("skipped")} skipped` : "";
console.log(`frontend-check: ${count("ok")} passed, ${count("FAILED")} failed${skipped}`);
process.exit(count("FAILED") === 0 ? 0 : 1);
