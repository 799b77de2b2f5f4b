// The budgets page of a Relay app: the first page arrives with the query,
// "load more" calls loadNext on the @connection (Relay refetches the Query
// fragment with the next cursor), and each row is a BudgetRow.
import { graphql } from "react-relay";

export const budgetListQuery = graphql`
  query BudgetListQuery($count: Int!) {
    ...BudgetList_query @arguments(count: $count)
  }
`;

export const budgetListFragment = graphql`
  fragment BudgetList_query on Query
  @refetchable(queryName: "BudgetListPaginationQuery")
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 20 }
    cursor: { type: "String" }
  ) {
    budgets(first: $count, after: $cursor) @connection(key: "BudgetList_budgets") {
      __id
      edges {
        node {
          id
          ...BudgetRow_budget
        }
      }
    }
  }
`;
