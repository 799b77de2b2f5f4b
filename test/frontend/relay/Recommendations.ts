// The recommendations list, paged with @connection like the budgets; a
// recommendation card refetches itself through node(id:).
import { graphql } from "react-relay";

export const recommendationCardFragment = graphql`
  fragment RecommendationCard_recommendation on Recommendation
  @refetchable(queryName: "RecommendationCardRefetchQuery") {
    id
    recommendationName
    estimatedMonthlySavings
    implementationEffort
    implementationEffortRaw
  }
`;

export const recommendationsQuery = graphql`
  query RecommendationsQuery {
    ...Recommendations_query
  }
`;

export const recommendationsFragment = graphql`
  fragment Recommendations_query on Query
  @refetchable(queryName: "RecommendationsPaginationQuery")
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 50 }
    cursor: { type: "String" }
  ) {
    recommendations(first: $count, after: $cursor)
      @connection(key: "Recommendations_recommendations") {
      edges {
        node {
          id
          recommendationId
          recommendationName
          estimatedMonthlySavings
          implementationEffort
          category
          actionType
          accountName
          region
          resourceId
          extra
        }
      }
    }
  }
`;
