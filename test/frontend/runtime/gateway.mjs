// What the run-time tests share: the gateway they talk to, a fetch that
// records each request, and the operations of operations/ with the
// variables that run each against the simulator's data.
//
// graph/frontend_test.go starts the gateway on the simulator and runs these
// files with `node --test`, with COSTGW_URL, COSTGW_SLOW_URL and COSTGW_KEY
// set.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { OperationTypeNode, parse, print, separateOperations } from "graphql";
import { explorerQuery } from "./explorer-query.mjs";

export const url = process.env.COSTGW_URL;
export const key = process.env.COSTGW_KEY;
// slowURL is a gateway whose upstream takes 300 ms a call (graph/frontend_test.go).
export const slowURL = process.env.COSTGW_SLOW_URL;

// deferredDashboard is the Explorer dashboard with its history deferred, and
// dashboardVariables its variables: what the clients' @defer tests send to
// slowURL, whose history comes well after its summary.
export const deferredDashboard = `
  query DeferredDashboard($q: ExplorerQueryInput!) {
    explorer {
      summary(query: $q) { cards { title value } }
      ... @defer(label: "history") {
        history(query: $q) { costRows { group date cost } }
      }
    }
  }
`;
export const dashboardVariables = { q: explorerQuery };
if (!url || !key) {
  throw new Error("COSTGW_URL and COSTGW_KEY must be set: go test -run TestFrontendClients ./graph runs these files");
}

// run tells this run's writes and documents from an earlier run's on the
// same gateway: idempotency keys and persisted query hashes outlive a run.
export const run = randomUUID().slice(0, 8);

/**
 * captureConsole makes every console.warn and console.error also go to the
 * list it returns, so that a test can fail on what a client library warned of.
 */
export function captureConsole() {
  const logged = [];
  for (const level of ["warn", "error"]) {
    const original = console[level];
    console[level] = (...args) => {
      logged.push(`console.${level}: ${args.join(" ")}`);
      original(...args);
    };
  }
  return logged;
}

/** recordingFetch is fetch that keeps each request's method, URL and parsed body. */
export function recordingFetch() {
  const requests = [];
  const record = async (input, init = {}) => {
    const u = new URL(String(input));
    const method = init.method ?? "GET";
    let body;
    if (typeof init.body === "string") body = JSON.parse(init.body);
    else if (method === "GET") {
      body = Object.fromEntries([...u.searchParams].map(([k, v]) => [k, k === "query" || k === "operationName" ? v : JSON.parse(v)]));
    }
    requests.push({ method, url: u, body });
    return fetch(input, init);
  };
  return { fetch: record, requests };
}

/** post sends one query straight to the gateway and returns its data, failing on any error. */
export async function post(query, variables = {}) {
  const r = await fetch(url, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({ query, variables }),
  });
  const body = await r.json();
  if (body.errors?.length) throw new Error(`${query}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * operations returns every operation of operations/*.graphql as a document of
 * its own with the fragments it spreads, by name, in file order: queries
 * first, then mutations.
 */
export function operations() {
  const dir = path.join(here, "operations");
  const files = readdirSync(dir).filter((f) => f.endsWith(".graphql")).sort();
  const all = parse(files.map((f) => readFileSync(path.join(dir, f), "utf8")).join("\n"));
  const kinds = Object.fromEntries(
    all.definitions.filter((d) => d.kind === "OperationDefinition").map((d) => [d.name.value, d.operation]),
  );
  const docs = Object.entries(separateOperations(all)).map(([name, doc]) => ({ name, kind: kinds[name], text: print(doc) }));
  return [...docs.filter((d) => d.kind !== OperationTypeNode.MUTATION), ...docs.filter((d) => d.kind === OperationTypeNode.MUTATION)];
}

/**
 * firstResult resolves with the first result that passes ok, of what
 * subscribe starts: subscribe(onResult, onError) subscribes to a client's
 * results and returns the subscription. A result with an error, an error,
 * or 30 s without a result that passes reject; `what` names the result
 * waited for.
 */
export function firstResult(subscribe, ok, what) {
  return new Promise((resolve, reject) => {
    let sub;
    const timer = setTimeout(() => reject(new Error(`no result ${what} in 30 s`)), 30000);
    const end = (settle, value) => {
      clearTimeout(timer);
      queueMicrotask(() => sub.unsubscribe()); // sub is not set yet when a result comes during subscribe
      settle(value);
    };
    sub = subscribe(
      (r) => {
        if (r.error) end(reject, r.error);
        else if (ok(r)) end(resolve, r);
      },
      (err) => end(reject, err),
    );
  });
}

/**
 * runEveryOperation runs each operation of operations/ with its variables
 * (variablesFor; tag names what the writes make) through run(name, kind,
 * variables), which returns the client's result, and checks that each
 * answers data without an error or a userError; after each query it awaits
 * readBack(name, variables, result), the client's check of its cache. It
 * returns the id of the budget CreateBudget made.
 */
export async function runEveryOperation(tag, run, readBack) {
  const id = await ids();
  let created;
  for (const { name, kind } of operations()) {
    const sets = variablesFor(name, id, created, tag);
    assert.ok(sets, `${name} has no variables in runtime/gateway.mjs variablesFor: add them`);
    for (const variables of sets) {
      const r = await run(name, kind, variables);
      assert.equal(r.error, undefined, `${name} ${JSON.stringify(variables)}: ${r.error}`);
      assert.ok(r.data, `${name}: no data`);
      const payload = r.data[Object.keys(r.data)[0]];
      if (payload?.userErrors) assert.deepEqual(payload.userErrors, [], `${name}: userErrors`);
      if (name === "CreateBudget") created = r.data.createBudget.budget.id;
      if (kind === "query") await readBack(name, variables, r);
    }
  }
  assert.ok(created, "CreateBudget ran");
  return created;
}

/** ids reads one id of each Node type and an Explorer report's REST id from the gateway. */
export async function ids() {
  const d = await post(`{
    budgets(first: 1) { nodes { id explorerReportId creator { id } explorerReport { id } plannings { id } } }
    recommendations(first: 1) { nodes { id } }
    anomalies(first: 1) { nodes { id } }
    scheduledNotifications(first: 1) { nodes { id } }
  }`);
  const b = d.budgets.nodes[0];
  return {
    budget: b.id,
    planning: b.plannings[0].id,
    user: b.creator.id,
    explorerReport: b.explorerReport.id,
    explorerReportId: b.explorerReportId,
    recommendation: d.recommendations.nodes[0].id,
    anomaly: d.anomalies.nodes[0].id,
    notification: d.scheduledNotifications.nodes[0].id,
  };
}

/**
 * variablesFor gives the variables each operation of operations/ runs with,
 * a list of sets for one that runs more than once; `created` is the id of
 * the budget that CreateBudget made, for the writes after it. An operation
 * missing here fails the test that runs them all: add it when you add one.
 */
export function variablesFor(name, id, created, tag) {
  const table = {
    BudgetList: [{ first: 5 }],
    BudgetDetail: [{ id: id.budget }],
    BudgetLookback: [{ input: { explorerReportId: id.explorerReportId, startDate: "2027-01-01" } }],
    ExplorerDashboard: [{ query: explorerQuery, dimension: "product_product_name" }],
    Recommendations: [{ first: 5 }],
    Anomalies: [{ first: 5 }],
    ScheduledNotifications: [{ first: 5 }],
    RefetchNode: [{ id: id.budget }, { id: id.planning }],
    RefetchNodes: [
      {
        ids: [id.budget, id.planning, id.recommendation, id.anomaly, id.notification, id.user, id.explorerReport],
      },
    ],
    CreateBudget: [
      {
        input: {
          name: `${tag} created`,
          startDate: "2027-01-01",
          numberOfPeriods: 12,
          explorerReportId: id.explorerReportId,
          idempotencyKey: `${tag}-${run}-create`,
        },
      },
    ],
    UpdateBudget: [{ input: { id: created, name: `${tag} renamed` } }],
    DeleteBudget: [{ input: { id: created } }],
  };
  return table[name];
}
