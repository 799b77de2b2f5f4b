package upstream

import (
	"context"
	"iter"

	"github.com/costgw/gateway/upstream/ops"
)

// RecommendationsService calls the Recommendations operations.
type RecommendationsService struct{ c *Client }

// List calls listRecommendations: GET /v1/recommendations.
func (s *RecommendationsService) List(ctx context.Context, opts *ListOptions) (*Page[Recommendation], error) {
	return list[Recommendation](ctx, s.c, ops.ListRecommendations, "/v1/recommendations", opts)
}

// All walks every page of listRecommendations.
func (s *RecommendationsService) All(ctx context.Context, pageSize int) iter.Seq2[Recommendation, error] {
	return all(ctx, ops.ListRecommendations, pageSize, s.List)
}

// AnomaliesService calls the Anomalies operations.
type AnomaliesService struct{ c *Client }

// List calls listAnomalies: GET /v1/anomalies.
func (s *AnomaliesService) List(ctx context.Context, opts *ListOptions) (*Page[Anomaly], error) {
	return list[Anomaly](ctx, s.c, ops.ListAnomalies, "/v1/anomalies", opts)
}

// All walks every page of listAnomalies.
func (s *AnomaliesService) All(ctx context.Context, pageSize int) iter.Seq2[Anomaly, error] {
	return all(ctx, ops.ListAnomalies, pageSize, s.List)
}

// NotificationsService calls the Notifications operations.
type NotificationsService struct{ c *Client }

// ListScheduled calls the list of scheduled notifications:
// GET /v1/notifications/scheduled. Its pagination carries Total.
func (s *NotificationsService) ListScheduled(ctx context.Context, opts *ListOptions) (*Page[ScheduledNotification], error) {
	return list[ScheduledNotification](ctx, s.c, ops.ListScheduledNotifications, "/v1/notifications/scheduled", opts)
}

// AllScheduled walks every page of the scheduled notifications.
func (s *NotificationsService) AllScheduled(ctx context.Context, pageSize int) iter.Seq2[ScheduledNotification, error] {
	return all(ctx, ops.ListScheduledNotifications, pageSize, s.ListScheduled)
}
