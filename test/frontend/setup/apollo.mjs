// Apollo Client 4 for costgw (test/frontend/setup/apollo.mjs, quoted in docs/schema.md).
import { ApolloClient, HttpLink, InMemoryCache } from "@apollo/client";
import { Defer20220824Handler } from "@apollo/client/incremental";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { relayStylePagination } from "@apollo/client/utilities";
import { keyless, possibleTypes } from "./schema-types.mjs";

// Every Node type has an `id`, which is what InMemoryCache keys on by default
// (`Budget:<id>`), so no type needs keyFields. A type without one is a part
// of its parent (a budget's metrics, the explorer of Query): merged with what
// the cache holds, so that two queries selecting different fields of it keep
// both. The connections page forwards with first/after.
export function apolloCache() {
  return new InMemoryCache({
    possibleTypes,
    typePolicies: {
      ...Object.fromEntries(keyless.map((type) => [type, { merge: true }])),
      Query: {
        fields: {
          budgets: relayStylePagination(),
          recommendations: relayStylePagination(),
          anomalies: relayStylePagination(),
          scheduledNotifications: relayStylePagination(),
        },
      },
    },
  });
}

// SHA-256 of a query, in hex, with the Web Crypto API of browsers and Node.
async function sha256(text) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// apolloClient talks to the gateway at url with the caller's bearer key.
// Automatic persisted queries send a query's hash alone once the gateway
// knows it (over GET with useGETForHashedQueries); @defer arrives in parts.
export function apolloClient({ url, key, fetch = globalThis.fetch, useGETForHashedQueries = false }) {
  const http = new HttpLink({ uri: url, headers: { Authorization: `Bearer ${key}` }, fetch });
  return new ApolloClient({
    link: new PersistedQueryLink({ sha256, useGETForHashedQueries }).concat(http),
    cache: apolloCache(),
    incrementalHandler: new Defer20220824Handler(),
  });
}
