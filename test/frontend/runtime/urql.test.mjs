// urql with graphcache, set up as docs/schema.md says (setup/urql.mjs),
// against the gateway on the simulator.
import assert from "node:assert/strict";
import { test } from "node:test";
import { gql } from "@urql/core";
import { urqlClient } from "../setup/urql.mjs";
import { captureConsole, dashboardVariables, deferredDashboard, firstResult, ids, key, operations, post, recordingFetch, runEveryOperation, slowURL, url, variablesFor } from "./gateway.mjs";

// graphcache writes its warnings to console.warn (and to console.error in
// places): each is a failure here.
const logged = captureConsole();

const ops = Object.fromEntries(operations().map((o) => [o.name, gql(o.text)]));

// next resolves with the first result of source that passes ok.
const next = (source, ok, what) => firstResult((onResult) => source.subscribe(onResult), ok, what);

test("every operation of operations/ runs through graphcache without a warning", async () => {
  logged.length = 0;
  const client = urqlClient({ url, key });
  await runEveryOperation(
    "urql-all",
    (name, kind, variables) =>
      (kind === "mutation" ? client.mutation(ops[name], variables) : client.query(ops[name], variables)).toPromise(),
    // Read back from the cache: the cache-only result is whole, so what was
    // written could be read as normalized.
    async (name, variables) => {
      const r = await client.query(ops[name], variables, { requestPolicy: "cache-only" }).toPromise();
      assert.ok(r.data && !r.stale, `${name} ${JSON.stringify(variables)} is not whole in the cache`);
    },
  );
  assert.deepEqual(logged, [], "graphcache logged");
});

test("budgets pages merge in order through relayPagination", async () => {
  const { fetch, requests } = recordingFetch();
  const client = urqlClient({ url, key, fetch });
  const want = (await post(`{ budgets(first: 20) { edges { node { id } } pageInfo { endCursor } } }`)).budgets;
  const first = await client.query(ops.BudgetList, { first: 10 }).toPromise();
  assert.equal(first.error, undefined);
  assert.equal(first.data.budgets.edges.length, 10);
  const after = first.data.budgets.pageInfo.endCursor;
  const second = await client.query(ops.BudgetList, { first: 10, after }).toPromise();
  assert.equal(second.error, undefined);
  assert.deepEqual(
    second.data.budgets.edges.map((e) => e.node.id),
    want.edges.map((e) => e.node.id),
    "the two pages merged are the first 20 budgets, in order",
  );
  assert.equal(second.data.budgets.pageInfo.endCursor, want.pageInfo.endCursor);
  assert.equal(second.data.budgets.pageInfo.hasNextPage, true);
  assert.equal(requests.length, 2, "one request a page");
});

test("updateBudget renames the budget in the cached list without a refetch", async () => {
  const { fetch, requests } = recordingFetch();
  const client = urqlClient({ url, key, fetch });
  const list = client.query(ops.BudgetList, { first: 5 });
  const before = await next(list, (r) => r.data, "of the list");
  const budget = before.data.budgets.edges[1].node;
  const name = `${budget.name} (urql)`;
  const renamed = next(list, (r) => r.data?.budgets.edges[1].node.name === name, "with the new name");
  const sent = requests.length;
  const m = await client.mutation(ops.UpdateBudget, { input: { id: budget.id, name } }).toPromise();
  assert.equal(m.error, undefined);
  assert.deepEqual(m.data.updateBudget.userErrors, []);
  const after = await renamed;
  assert.equal(after.data.budgets.edges.length, 5);
  assert.deepEqual(
    requests.slice(sent).map((r) => r.body.operationName ?? r.body.query?.match(/^\w+ (\w+)/)?.[1]),
    ["UpdateBudget"],
    "the mutation was the only request",
  );
});

test("deleteBudget takes the budget out of the cached list", async () => {
  const id = await ids();
  const client = urqlClient({ url, key });
  const made = await client
    .mutation(ops.CreateBudget, { input: variablesFor("CreateBudget", id, undefined, "urql-delete")[0].input })
    .toPromise();
  assert.equal(made.error, undefined);
  const created = made.data.createBudget.budget.id;
  const list = client.query(ops.BudgetList, { first: 50 });
  const has = (r) => r.data?.budgets.edges.some((e) => e.node.id === created);
  await next(list, has, "holding the new budget");
  const gone = next(list, (r) => r.data && !r.stale && !has(r), "without the deleted budget");
  const d = await client.mutation(ops.DeleteBudget, { input: { id: created } }).toPromise();
  assert.equal(d.error, undefined);
  assert.equal(d.data.deleteBudget.success, true);
  await gone;
});

// @defer through graphcache and urql's own multipart parser, against the
// gateway whose upstream takes 300 ms a call (the Explorer's history 600 ms
// more): the first result has the summary without the history, marked as
// having more to come, the last the history; graphcache warns of nothing.
test("a deferred query's parts come through graphcache in order, without a warning", async () => {
  assert.ok(slowURL, "COSTGW_SLOW_URL is not set");
  logged.length = 0;
  const client = urqlClient({ url: slowURL, key });
  const query = gql(deferredDashboard);
  const results = [];
  const last = await next(
    client.query(query, dashboardVariables, { requestPolicy: "network-only" }),
    (r) => {
      if (r.data) results.push(r);
      return r.data && !r.hasNext && !r.stale;
    },
    "with the deferred history",
  );
  assert.ok(results.length >= 2, `${results.length} result(s): the answer came whole, nothing was deferred`);
  const first = results[0];
  assert.equal(first.hasNext, true, "the first result does not say more is to come");
  assert.ok(first.data.explorer.summary.cards.length > 0, "the first result lacks the summary");
  assert.ok(!first.data.explorer.history, "the first result holds the deferred history");
  assert.ok(last.data.explorer.history.costRows.length > 0, "the last result lacks the deferred history");
  assert.deepEqual(logged, []);
});
