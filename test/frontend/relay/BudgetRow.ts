// One budget with its planning rows. @refetchable on a Node type makes Relay
// generate BudgetRowRefetchQuery, which refetches the row through node(id:).
import { graphql } from "react-relay";

export const budgetRowFragment = graphql`
  fragment BudgetRow_budget on Budget
  @refetchable(queryName: "BudgetRowRefetchQuery") {
    id
    name
    status
    period
    targetType
    numberOfPeriods
    startDate
    endDate
    lookbackPeriod
    createdAt
    updatedAt
    explorerReport {
      id
      name
    }
    creator {
      id
      firstName
      lastName
      email
    }
    metrics {
      totalTarget
      totalActual
      variance
    }
    actuals {
      total
      byPeriod {
        period
        amount
      }
    }
    plannings {
      id
      ...PlanningRow_planning
    }
  }
`;
