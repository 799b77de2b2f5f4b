package sim

// The seeded recommendations, anomalies and notifications never change, so
// their lists read without a lock.

func listRecommendations(c *call) response {
	return listPage(c, c.org.recommendations, func(r *recommendation) int64 { return r.seq }, false)
}

func listAnomalies(c *call) response {
	return listPage(c, c.org.anomalies, func(a *anomaly) int64 { return a.seq }, false)
}

func listScheduledNotifications(c *call) response {
	return listPage(c, c.org.notifications, func(n *notification) int64 { return n.seq }, true)
}
