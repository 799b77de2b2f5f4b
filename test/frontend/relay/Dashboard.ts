// The Explorer dashboard: cards, the change against the previous period, the
// history chart, the heatmap and a dimension's values, in one query. Explorer
// results have no identity; Relay keeps them under the query's client IDs.
import { graphql } from "react-relay";

export const dashboardQuery = graphql`
  query DashboardQuery($query: ExplorerQueryInput!, $dimension: String!) {
    explorer {
      summary(query: $query) {
        cards {
          title
          description
          value
          previousValue
        }
        servedFromCache
      }
      previousPeriod(query: $query) {
        currentTotal
        previousTotal
        changePercent
        servedFromCache
      }
      history(query: $query) {
        costRows {
          group
          date
          cost
        }
        timeColumn
        groupBy
        servedFromCache
      }
      heatmap(query: $query) {
        rows {
          dimension
          day
          cost
        }
        servedFromCache
      }
      dimensionValues(key: $dimension) {
        items {
          value
          cost
        }
        hasMore
      }
    }
  }
`;
