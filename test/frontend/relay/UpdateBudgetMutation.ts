// Updating a budget: the answer carries the budget's id, so Relay's store
// updates every view of it without an updater.
import { graphql } from "react-relay";

export const updateBudgetMutation = graphql`
  mutation UpdateBudgetMutation($input: UpdateBudgetInput!) {
    updateBudget(input: $input) {
      budget {
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
