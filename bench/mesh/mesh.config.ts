// GraphQL Mesh over the REST contract (upstream/openapi.yaml): the peer that
// `go run ./bench` measures the gateway against. mesh-compose turns this into
// supergraph.graphql; hive-gateway serves it.
import { defineConfig } from '@graphql-mesh/compose-cli';
import { loadOpenAPISubgraph } from '@omnigraph/openapi';
import { GraphQLString } from 'graphql';

export const composeConfig = defineConfig({
  subgraphs: [
    {
      sourceHandler: loadOpenAPISubgraph('CostAPI', {
        source: '../../upstream/openapi.yaml',
        // The contract's server URL is a {base_url} variable; the bench points
        // it at the simulator it started.
        endpoint: process.env.COSTSIM_URL || 'http://127.0.0.1:8090',
        // Each caller's own key goes upstream, as the gateway does it.
        operationHeaders: { Authorization: '{context.headers.authorization}' },
        // Mesh's own Date scalar turns "2026-10-01" into a JavaScript Date and
        // sends it upstream as "2026-10-01T00:00:00.000Z", which the contract
        // refuses; the contract's dates are plain strings, so keep them so.
        getScalarForFormat: (format: string) => (format === 'date' ? GraphQLString : undefined),
        // The Explorer queries are POSTs that only read: make them query
        // fields, so a dashboard is one query as it is on the gateway.
        selectQueryOrMutationField: [
          { type: 'Query', fieldName: 'explorerSummary' },
          { type: 'Query', fieldName: 'explorerPreviousPeriod' },
          { type: 'Query', fieldName: 'explorerHistory' },
          { type: 'Query', fieldName: 'explorerHeatmap' },
        ],
      }),
    },
  ],
  // A budget's single read and actuals as fields of the budget record, so the
  // 50-budget overview is one query: Mesh resolves them per budget.
  additionalTypeDefs: /* GraphQL */ `
    extend type Budget {
      detail: getBudget_response
        @resolveTo(
          sourceName: "CostAPI"
          sourceTypeName: "Query"
          sourceFieldName: "getBudget"
          requiredSelectionSet: "{ id }"
          sourceArgs: { id: "{root.id}" }
        )
      actuals: getBudgetActuals_response
        @resolveTo(
          sourceName: "CostAPI"
          sourceTypeName: "Query"
          sourceFieldName: "getBudgetActuals"
          requiredSelectionSet: "{ id }"
          sourceArgs: { id: "{root.id}" }
        )
    }
  `,
});
