// Runs the Explorer dashboard with its slow panels deferred through urql,
// a real client library, against the gateway URL given as the first
// argument, and checks what arrives: the fast panels first, each deferred
// panel later in its own part, merged by the client into one result.
//
// The second argument is the bearer key. Exits non-zero on any difference.
import { Client, fetchExchange, gql } from "@urql/core";
import { explorerQuery } from "../runtime/explorer-query.mjs";

const [url, key] = process.argv.slice(2);
if (!url || !key) {
  console.error("usage: node defer.mjs <graphql url> <api key>");
  process.exit(2);
}

const query = gql`
  query DeferredDashboard($q: ExplorerQueryInput!) {
    explorer {
      summary(query: $q) { cards { title value } }
      previousPeriod(query: $q) { currentTotal changePercent }
      ... @defer(label: "history") {
        history(query: $q) { costRows { group date cost } }
      }
      ... @defer(label: "heatmap") {
        heatmap(query: $q) { rows { dimension day cost } }
      }
    }
  }
`;

const client = new Client({
  url,
  exchanges: [fetchExchange],
  fetchOptions: { headers: { Authorization: `Bearer ${key}` } },
});

const results = [];
await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error("no final result in 20 s")), 20000);
  client.query(query, { q: explorerQuery }, { requestPolicy: "network-only" }).subscribe((r) => {
    results.push(r);
    if (r.error) {
      clearTimeout(timer);
      reject(r.error);
    } else if (!r.hasNext) {
      clearTimeout(timer);
      resolve();
    }
  });
});

const fail = (msg) => {
  console.error("defer: " + msg);
  process.exit(1);
};
const first = results[0].data?.explorer;
const last = results.at(-1).data?.explorer;
console.log(`defer: ${results.length} results through urql; the first has ${Object.keys(first ?? {}).join(", ")}`);
if (results.length < 2) fail("the answer came in one part: nothing was deferred");
if (!first?.summary?.cards?.length || first.previousPeriod == null) fail("the first result lacks the panels that were not deferred");
if (first.history?.costRows?.length && first.heatmap?.rows?.length) fail("the first result already holds both deferred panels");
if (!last?.history?.costRows?.length || !last?.heatmap?.rows?.length) fail("the final result lacks a deferred panel");
if (last.summary.cards.length !== first.summary.cards.length) fail("the final result lost what the first had");
console.log(`defer: ok: ${last.history.costRows.length} history rows and ${last.heatmap.rows.length} heatmap cells arrived after the first result`);
