// The playground: GraphiQL, configured by the gateway that serves it.
//
// Everything it needs is bundled by Vite and served by the gateway itself;
// nothing is fetched from another origin, so it works offline.
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import 'graphiql/style.css';
import './playground.css';

// readConfig returns the JSON the gateway put into index.html.
function readConfig() {
  const el = document.getElementById('costgw-config');
  try {
    return JSON.parse(el ? el.textContent : '{}') || {};
  } catch {
    return {};
  }
}

const config = readConfig();
const endpoint = config.endpoint || '/graphql';

// fetcher posts one operation to the gateway with the headers of the
// headers editor. The gateway serves queries and mutations over HTTP only,
// so no subscription transport is needed.
async function fetcher(params, opts) {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: {
      Accept: 'application/graphql-response+json, application/json',
      'Content-Type': 'application/json',
      ...(opts && opts.headers),
    },
    body: JSON.stringify(params),
  });
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return { errors: [{ message: `HTTP ${res.status}: ${text.slice(0, 500)}` }] };
  }
}

const headers = config.headers && Object.keys(config.headers).length > 0
  ? JSON.stringify(config.headers, null, 2)
  : undefined;

createRoot(document.getElementById('graphiql')).render(
  <StrictMode>
    <GraphiQL
      fetcher={fetcher}
      defaultQuery={config.query}
      defaultHeaders={headers}
      defaultEditorToolsVisibility={headers ? 'headers' : false}
      shouldPersistHeaders={false}
    />
  </StrictMode>,
);
