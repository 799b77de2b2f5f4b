// A row of a budget's planning grid; Planning is a Node too, so the row can
// refresh itself (PlanningRowRefetchQuery, through node(id:)).
import { graphql } from "react-relay";

export const planningRowFragment = graphql`
  fragment PlanningRow_planning on Planning
  @refetchable(queryName: "PlanningRowRefetchQuery") {
    id
    dimension1
    dimension2
    previousMonth
    avgLookback
    percentGrowth
    percentSpend
    targetType
    createdAt
    targetItems {
      dimensionValue
      amount
    }
    actuals {
      period
      amount
    }
  }
`;
