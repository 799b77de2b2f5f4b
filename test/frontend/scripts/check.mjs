// The frontend check: what a Relay app and a graphql-codegen app see of the
// gateway's schema. Runs every step even when one fails, so one run reports
// everything, then prints a summary naming each step that failed.
//
//   1. relay-compiler compiles relay/ (zero errors).
//   2. graphql-codegen's client preset compiles operations/ (zero errors).
//   3. The generated types have no `any` where a field's type belongs, and
//      codegen's output type-checks with tsc --strict.
//   4. No unacknowledged breaking change in the schema's history.
//   5. setup/schema-types.mjs matches the schema (scripts/schema-types.mjs),
//      and docs/schema.md quotes each file of setup/ as it is.
//
// Run it with `make frontend-check` from the repository root, or
// `npm run check` here after `npm ci`.
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ALLOWED, findAny, typeCheck } from "./no-any.mjs";
import { checkBreakingChanges } from "./breaking.mjs";
import { checkSchemaTypes } from "./schema-types.mjs";
import { checkQuotedSetups } from "./quoted.mjs";

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
process.chdir(here);

// The schema is named once, in relay.config.json; codegen.ts reads it there.
const relayConfig = JSON.parse(readFileSync("relay.config.json", "utf8"));
const schemaFile = path.resolve(relayConfig.schema);
const relayOut = path.resolve(relayConfig.artifactDirectory);
const codegenOut = path.resolve("out/codegen");
const acksFile = path.resolve("breaking-changes.txt");

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
  `  intended, update them as test/frontend/README.md says ("When the schema changes"); the breaking-change\n` +
  `  step below tells whether a client already in use would break too.`;

const relayOk = await step("relay-compiler: relay/*.ts → out/relay", () => {
  const ok = run("relay-compiler", ["relay.config.json"]);
  if (!ok) console.log(stale("relay"));
  return ok;
});

const codegenOk = await step("graphql-codegen client preset: operations/*.graphql → out/codegen", () => {
  const ok = run("graphql-codegen", ["--config", "codegen.ts"]);
  if (!ok) console.log(stale("operations"));
  return ok;
});

await step("generated types: no `any` for a field, and codegen's output compiles with tsc --strict", () => {
  if (!relayOk && !codegenOk) {
    console.log("  · both compilers failed: nothing generated to check");
    return "skipped";
  }
  const files = [...(relayOk ? tsFiles(relayOut) : []), ...(codegenOk ? tsFiles(codegenOut) : [])];
  if (!relayOk) console.log("  · relay-compiler failed: only codegen's output is checked");
  if (!codegenOk) console.log("  · graphql-codegen failed: only Relay's artifacts are checked");
  const { violations, allowed, parseErrors } = findAny(files);
  for (const e of parseErrors) console.log(`  ✖ ${e}`);
  console.log(`  ${files.length} generated files read`);
  for (const [why, n] of Object.entries(allowed)) {
    if (n > 0) console.log(`  · ${n} × any allowed as ${ALLOWED[why]}`);
  }
  if (violations.length > 0) {
    console.log(`\n  ✖ ${violations.length} × any where a value's type belongs:`);
    for (const v of violations) {
      console.log(`      ${path.relative(process.cwd(), v.file)}:${v.line}  ${v.path}`);
      console.log(`        ${v.text}`);
    }
    console.log(
      `\n    A custom scalar without a mapping shows up as any: map it in codegen.ts (scalars) and in\n` +
        `    relay.config.json (customScalarTypes). JSON maps to unknown; a field whose shape the contract\n` +
        `    knows should have a GraphQL type rather than JSON.`,
    );
  }
  let compiles = true;
  if (codegenOk) {
    const diagnostics = typeCheck(path.join(codegenOut, "index.ts"));
    for (const d of diagnostics) console.log(`  ✖ tsc: ${d}`);
    compiles = diagnostics.length === 0;
    if (compiles) console.log("  codegen's output compiles with tsc --strict");
  }
  return violations.length === 0 && parseErrors.length === 0 && compiles;
});

await step("breaking changes: graphql-inspector over every version of the schema in git", () =>
  checkBreakingChanges({ schemaFile, acksFile }),
);

await step("client setups: setup/schema-types.mjs matches the schema, docs/schema.md quotes setup/", () => {
  const types = checkSchemaTypes({ schemaFile });
  const quoted = checkQuotedSetups();
  return types && quoted;
});

const count = (status) => results.filter((r) => r.status === status).length;
console.log("\n== summary");
for (const r of results) console.log(`  ${r.status.padEnd(7)} ${r.name} (${r.secs}s)`);
const skipped = count("skipped") > 0 ? `, ${count("skipped")} skipped` : "";
console.log(`frontend-check: ${count("ok")} passed, ${count("FAILED")} failed${skipped}`);
process.exit(count("FAILED") === 0 ? 0 : 1);
