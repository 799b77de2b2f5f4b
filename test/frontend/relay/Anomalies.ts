// The anomalies list, paged with @connection.
import { graphql } from "react-relay";

export const anomaliesQuery = graphql`
  query AnomaliesQuery {
    ...Anomalies_query
  }
`;

export const anomaliesFragment = graphql`
  fragment Anomalies_query on Query
  @refetchable(queryName: "AnomaliesPaginationQuery")
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 50 }
    cursor: { type: "String" }
  ) {
    anomalies(first: $count, after: $cursor) @connection(key: "Anomalies_anomalies") {
      edges {
        node {
          anomalyId
          service
          startDate
          endDate
          scoreCurrent
          scoreMax
          impactMax
          impactTotal
          impactPct
          impactActualSpend
          impactExpectedSpend
          dimensionValue
          detectionSource
        }
      }
    }
  }
`;
