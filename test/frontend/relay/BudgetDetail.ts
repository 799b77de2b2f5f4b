// A budget's page, reached by its global ID through node(id:), with the
// fields the list does not show; and a batch refetch through nodes(ids:),
// as a client does to refresh what it has cached. Relay needs @alias on a
// fragment spread whose type (Budget) is narrower than the field's (Node).
import { graphql } from "react-relay";

export const budgetDetailQuery = graphql`
  query BudgetDetailQuery($id: ID!) {
    node(id: $id) {
      __typename
      id
      ... on Budget {
        ...BudgetRow_budget @alias(as: "row")
        upstreamId
        organizationId
        serviceClientId
        creatorId
        explorerReportId
        normalizationPeriod
        budgetType
        startingValue
        customStartingValue
        growthRate
        dimensions
        actuals {
          byPlanning {
            planningId
            periods {
              period
              amount
            }
          }
        }
      }
    }
  }
`;

export const budgetDetailNodesQuery = graphql`
  query BudgetDetailNodesQuery($ids: [ID!]!) {
    nodes(ids: $ids) {
      __typename
      id
      ... on Budget {
        name
        status
      }
      ... on Planning {
        dimension1
        budgetId
        budget {
          id
          name
        }
      }
    }
  }
`;
