// Deleting a budget: @deleteEdge removes it from the given connections and
// @deleteRecord from the store, both keyed by the global ID the payload returns.
import { graphql } from "react-relay";

export const deleteBudgetMutation = graphql`
  mutation DeleteBudgetMutation($input: DeleteBudgetInput!, $connections: [ID!]!) {
    deleteBudget(input: $input) {
      deletedBudgetId @deleteEdge(connections: $connections) @deleteRecord
      success
      userErrors {
        ...UserErrors_userErrors
      }
    }
  }
`;
