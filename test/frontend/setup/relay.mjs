// relay-runtime for costgw (test/frontend/setup/relay.mjs, quoted in docs/schema.md).
import { Environment, Network, RecordSource, Store } from "relay-runtime";

// relayEnvironment talks to the gateway at url with the caller's bearer key.
// Relay keys records by `id`, which every Node type has and which is global
// across types, as Relay requires; node(id:) refetches any of them.
export function relayEnvironment({ url, key, fetch = globalThis.fetch }) {
  const network = Network.create(async (params, variables) => {
    const response = await fetch(url, {
      method: "POST",
      headers: {
        Accept: "application/graphql-response+json, application/json",
        Authorization: `Bearer ${key}`,
        "Content-Type": "application/json",
      },
      // With persisted documents (-persisted-documents), send
      // { doc_id: params.id, variables } instead.
      body: JSON.stringify({ query: params.text, variables }),
    });
    return response.json();
  });
  return new Environment({ network, store: new Store(new RecordSource()) });
}
