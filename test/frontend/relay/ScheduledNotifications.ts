// The scheduled notifications list, paged with @connection, with its total.
import { graphql } from "react-relay";

export const scheduledNotificationsQuery = graphql`
  query ScheduledNotificationsQuery {
    ...ScheduledNotifications_query
  }
`;

export const scheduledNotificationsFragment = graphql`
  fragment ScheduledNotifications_query on Query
  @refetchable(queryName: "ScheduledNotificationsPaginationQuery")
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 50 }
    cursor: { type: "String" }
  ) {
    scheduledNotifications(first: $count, after: $cursor)
      @connection(key: "ScheduledNotifications_scheduledNotifications") {
      totalCount
      edges {
        node {
          id
          recipientEmail
          subject
          scheduleType
          scheduledAt
          recurrenceFrequency
          recurrenceTimezone
          recurrenceWeekday
          recurrenceDayOfMonth
          cronExpression
          status
          sentAt
          errorMessage
          nextAttemptAt
          createdAt
          updatedAt
          canvasId
          explorerReportId
          includeAssistantAnalysis
        }
      }
    }
  }
`;
