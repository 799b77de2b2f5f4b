// Creating a budget puts it at the top of the budgets list: @prependNode adds
// the new Budget to the connections whose IDs the caller passes (the list's
// __id), with an edge of type BudgetEdge.
import { graphql } from "react-relay";

export const createBudgetMutation = graphql`
  mutation CreateBudgetMutation($input: CreateBudgetInput!, $connections: [ID!]!) {
    createBudget(input: $input) {
      budget @prependNode(connections: $connections, edgeTypeName: "BudgetEdge") {
        id
        ...BudgetRow_budget
      }
      userErrors {
        ...UserErrors_userErrors
      }
      idempotencyKey
    }
  }
`;
