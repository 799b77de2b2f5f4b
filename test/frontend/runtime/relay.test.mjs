// relay-runtime, set up as docs/schema.md says (setup/relay.mjs), with the
// artifacts relay-compiler makes of relay/*.ts, against the gateway on the
// simulator: node(id:) and nodes(ids:) results normalized into the store.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { createOperationDescriptor, fetchQuery, getRequest } from "relay-runtime";
import { relayEnvironment } from "../setup/relay.mjs";
import { ids, key, url } from "./gateway.mjs";

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let tmp;
let artifact;

// relay-compiler writes TypeScript artifacts (out/relay/__generated__);
// each is transpiled to CommonJS, which resolves their imports of each other.
before(() => {
  const generated = path.join(here, "out", "relay", "__generated__");
  // relay-compiler refuses a config whose artifactDirectory does not exist
  // (on a fresh clone, before the frontend check has made it).
  mkdirSync(generated, { recursive: true });
  const r = spawnSync(path.join(here, "node_modules", ".bin", "relay-compiler"), ["relay.config.json"], {
    cwd: here,
    encoding: "utf8",
  });
  assert.equal(r.status, 0, `relay-compiler: ${r.stdout}${r.stderr}`);
  tmp = mkdtempSync(path.join(os.tmpdir(), "costgw-relay-"));
  for (const f of readdirSync(generated).filter((f) => f.endsWith(".graphql.ts"))) {
    const { outputText } = ts.transpileModule(readFileSync(path.join(generated, f), "utf8"), {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    });
    writeFileSync(path.join(tmp, f.replace(/\.ts$/, ".js")), outputText);
  }
  const require = createRequire(path.join(tmp, "index.js"));
  artifact = (name) => require(`./${name}.graphql.js`).default;
});
after(() => tmp && rmSync(tmp, { recursive: true, force: true }));

test("node(id:) stores the budget, its planning rows and its people by id", async () => {
  const id = await ids();
  const env = relayEnvironment({ url, key });
  const query = artifact("BudgetDetailQuery");
  const data = await fetchQuery(env, query, { id: id.budget }).toPromise();
  assert.equal(data.node.id, id.budget);
  assert.equal(data.node.__typename, "Budget");

  const source = env.getStore().getSource();
  const budget = source.get(id.budget);
  assert.equal(budget?.__typename, "Budget", "the budget is a record of its own, keyed by its id");
  assert.equal(typeof budget.name, "string");
  assert.deepEqual(source.get("client:root")[`node(id:"${id.budget}")`], { __ref: id.budget }, "node(id:) links to it");
  const plannings = budget.plannings.__refs;
  assert.ok(plannings.length > 0);
  assert.ok(plannings.includes(id.planning));
  for (const p of plannings) assert.equal(source.get(p)?.__typename, "Planning", `${p} is a Planning record`);
  assert.equal(source.get(budget.creator.__ref)?.__typename, "User");
  assert.equal(source.get(budget.explorerReport.__ref)?.__typename, "ExplorerReport");
  // BudgetMetrics has no id: Relay keeps it as a client record under its budget.
  assert.match(budget.metrics.__ref, /^client:/);
  assert.equal(typeof source.get(budget.metrics.__ref).totalTarget, "number");

  // What the store holds reads back as the query's data.
  const snapshot = env.lookup(createOperationDescriptor(getRequest(query), { id: id.budget }).fragment);
  assert.equal(snapshot.isMissingData, false);
  assert.equal(snapshot.data.node.id, id.budget);
});

test("nodes(ids:) stores each object by its id, one record per id across queries", async () => {
  const id = await ids();
  const env = relayEnvironment({ url, key });
  const list = [id.budget, id.planning];
  const data = await fetchQuery(env, artifact("BudgetDetailNodesQuery"), { ids: list }).toPromise();
  assert.deepEqual(
    data.nodes.map((n) => [n.__typename, n.id]),
    [
      ["Budget", id.budget],
      ["Planning", id.planning],
    ],
  );
  const source = env.getStore().getSource();
  assert.deepEqual(source.get("client:root")[`nodes(ids:${JSON.stringify(list)})`].__refs, list);
  const planning = source.get(id.planning);
  assert.equal(planning.__typename, "Planning");
  assert.equal(typeof planning.dimension1, "string");
  // The planning's budget is the same record the nodes query stored first.
  assert.equal(planning.budget.__ref, id.budget);
  const name = source.get(id.budget).name;
  assert.equal(data.nodes[1].budget.name, name);

  // A later node(id:) of the budget updates that one record.
  await fetchQuery(env, artifact("BudgetDetailQuery"), { id: id.budget }).toPromise();
  assert.equal(env.getStore().getSource().get(id.budget).name, name);
  assert.ok(env.getStore().getSource().get(id.budget).plannings.__refs.includes(id.planning));
});
