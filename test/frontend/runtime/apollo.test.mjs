// Apollo Client 4, set up as docs/schema.md says (setup/apollo.mjs), against
// the gateway on the simulator. Apollo Client's development checks are on
// (__DEV__), so what it would warn a developer of in a browser fails here.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { captureConsole, dashboardVariables, deferredDashboard, firstResult, key, operations, post, recordingFetch, run as runId, runEveryOperation, slowURL, url } from "./gateway.mjs";

globalThis.__DEV__ = true;
const { gql } = await import("@apollo/client");
const { loadDevMessages, loadErrorMessages } = await import("@apollo/client/dev");
const { apolloClient } = await import("../setup/apollo.mjs");
loadDevMessages();
loadErrorMessages();

const logged = captureConsole();

const ops = Object.fromEntries(operations().map((o) => [o.name, gql(o.text)]));
const sha256 = (text) => createHash("sha256").update(text).digest("hex");
const operationName = (r) => r.body?.operationName;

// next resolves with the first result of an observable that passes ok.
const next = (observable, ok, what) =>
  firstResult((onResult, onError) => observable.subscribe({ next: onResult, error: onError }), ok, what);

test("every operation of operations/ runs through InMemoryCache without a warning", async () => {
  logged.length = 0;
  const client = apolloClient({ url, key });
  await runEveryOperation(
    "apollo-all",
    (name, kind, variables) =>
      kind === "mutation"
        ? client.mutate({ mutation: ops[name], variables })
        : client.query({ query: ops[name], variables, fetchPolicy: "network-only" }),
    (name, variables, r) => {
      const cached = client.readQuery({ query: ops[name], variables });
      assert.deepEqual(cached, r.data, `${name} ${JSON.stringify(variables)} reads back whole from the cache`);
    },
  );
  assert.deepEqual(logged, [], "Apollo Client logged");
});

test("budgets pages merge in order through relayStylePagination", async () => {
  const { fetch, requests } = recordingFetch();
  const client = apolloClient({ url, key, fetch });
  const want = (await post(`{ budgets(first: 20) { edges { node { id } } pageInfo { endCursor } } }`)).budgets;
  const list = client.watchQuery({ query: ops.BudgetList, variables: { first: 10 } });
  const first = await next(list, (r) => r.data?.budgets, "of the first page");
  assert.equal(first.data.budgets.edges.length, 10);
  await list.fetchMore({ variables: { after: first.data.budgets.pageInfo.endCursor } });
  const merged = client.readQuery({ query: ops.BudgetList, variables: { first: 10 } });
  assert.deepEqual(
    merged.budgets.edges.map((e) => e.node.id),
    want.edges.map((e) => e.node.id),
    "the two pages merged are the first 20 budgets, in order",
  );
  assert.equal(merged.budgets.pageInfo.endCursor, want.pageInfo.endCursor);
  assert.equal(merged.budgets.pageInfo.hasNextPage, true);
  assert.deepEqual(
    [...new Set(requests.filter((r) => operationName(r) === "BudgetList").map((r) => r.body.variables.after ?? null))],
    [null, first.data.budgets.pageInfo.endCursor],
    "a request for each page, the second after the first's end",
  );
});

test("updateBudget renames the budget in the cached list without a refetch", async () => {
  const { fetch, requests } = recordingFetch();
  const client = apolloClient({ url, key, fetch });
  const list = client.watchQuery({ query: ops.BudgetList, variables: { first: 5 } });
  const before = await next(list, (r) => r.data?.budgets, "of the list");
  const budget = before.data.budgets.edges[2].node;
  const name = `${budget.name} (apollo)`;
  const renamed = next(list, (r) => r.data?.budgets.edges[2].node.name === name, "with the new name");
  const sent = requests.length;
  const m = await client.mutate({ mutation: ops.UpdateBudget, variables: { input: { id: budget.id, name } } });
  assert.deepEqual(m.data.updateBudget.userErrors, []);
  const after = await renamed;
  assert.equal(after.data.budgets.edges.length, 5);
  assert.deepEqual(
    [...new Set(requests.slice(sent).map(operationName))],
    ["UpdateBudget"],
    "only the mutation went to the gateway",
  );
});

// Each APQ test runs a document no other test or run sends, so that the
// gateway has not seen its hash before.
for (const [method, useGETForHashedQueries] of [
  ["POST", false],
  ["GET", true],
]) {
  test(`automatic persisted queries over ${method}`, async () => {
    const query = `query Apq${method}_${runId} { budgets(first: 2) { nodes { id name } } }`;
    const doc = gql(query);
    const run = async () => {
      const { fetch, requests } = recordingFetch();
      const client = apolloClient({ url, key, fetch, useGETForHashedQueries });
      const r = await client.query({ query: doc });
      assert.equal(r.data.budgets.nodes.length, 2);
      return requests;
    };
    const apq = (r) => r.body.extensions?.persistedQuery;

    // The first time: the hash alone, PERSISTED_QUERY_NOT_FOUND, then the
    // query with its hash (over POST: Apollo sends a query's text by POST).
    const first = await run();
    assert.deepEqual(
      first.map((r) => [r.method, r.body.query === undefined]),
      [
        [method, true],
        ["POST", false],
      ],
    );
    for (const r of first) assert.deepEqual(apq(r), { version: 1, sha256Hash: sha256(first[1].body.query) });

    // Then, from a new client with an empty cache: the hash alone.
    const again = await run();
    assert.equal(again.length, 1);
    assert.equal(again[0].method, method);
    assert.equal(again[0].body.query, undefined);
    assert.equal(again[0].url.searchParams.has("query"), false);
    assert.deepEqual(apq(again[0]), apq(first[0]));
  });
}

// @defer through Defer20220824Handler (set in setup/apollo.mjs), against a
// gateway whose upstream takes 300 ms a call: the first result comes while
// the deferred fields are still owed, without them and marked as streaming,
// and the last is complete. (Before, the first result came only with the
// deferred data, as a part was closed only when the next began, and it held
// the deferred fields as null, which Apollo Client took as complete.)
test("a deferred query's first result comes before its deferred data, without the deferred fields", async () => {
  assert.ok(slowURL, "COSTGW_SLOW_URL is not set");
  logged.length = 0;
  const client = apolloClient({ url: slowURL, key });
  const query = gql(deferredDashboard);
  const results = [];
  await next(
    client.watchQuery({ query, variables: dashboardVariables, fetchPolicy: "network-only" }),
    (r) => {
      if (r.loading && !r.data) return false; // the loading state before any data
      results.push({ ...r, at: performance.now() });
      return r.dataState === "complete";
    },
    "complete",
  );
  assert.ok(results.length >= 2, `${results.length} result(s): the answer came whole, nothing was deferred: ${JSON.stringify(results).slice(0, 400)}`);
  const [first, last] = [results[0], results.at(-1)];
  assert.equal(first.dataState, "streaming", "the first result is not marked as streaming");
  assert.ok(first.data.explorer.summary.cards.length > 0, "the first result lacks the summary");
  assert.equal("history" in first.data.explorer, false, "the first result holds the deferred field");
  assert.ok(last.data.explorer.history.costRows.length > 0, "the last result lacks the deferred history");
  assert.ok(first.at < last.at);
  assert.deepEqual(logged, []);
});
