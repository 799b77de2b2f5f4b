// urql with graphcache for costgw (test/frontend/setup/urql.mjs, quoted in docs/schema.md).
import { Client, fetchExchange } from "@urql/core";
import { cacheExchange } from "@urql/exchange-graphcache";
import { relayPagination } from "@urql/exchange-graphcache/extras";
import { keyless, schema } from "./schema-types.mjs";

// graphcache keys every Node type by its `id`. The types without one are
// named with a key of null: kept inside their parent, without a warning for
// each. The schema lets it write and read a fragment under `node` only for
// its own type.
export function urqlCache() {
  return cacheExchange({
    schema,
    keys: Object.fromEntries(keyless.map((type) => [type, () => null])),
    resolvers: {
      Query: {
        budgets: relayPagination(),
        recommendations: relayPagination(),
        anomalies: relayPagination(),
        scheduledNotifications: relayPagination(),
      },
    },
    updates: {
      Mutation: {
        // A deleted budget leaves the cache; the lists holding it refetch.
        deleteBudget(result, args, cache) {
          if (result.deleteBudget?.success) cache.invalidate({ __typename: "Budget", id: args.input.id });
        },
      },
    },
  });
}

// urqlClient talks to the gateway at url with the caller's bearer key.
export function urqlClient({ url, key, fetch = globalThis.fetch }) {
  return new Client({
    url,
    fetch,
    exchanges: [urqlCache(), fetchExchange],
    fetchOptions: { headers: { Authorization: `Bearer ${key}` } },
  });
}
