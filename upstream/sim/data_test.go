package sim_test

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/sim"
)

// all returns every record of a list, following cursors.
func (e *env) all(t *testing.T, key, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	q := "?limit=200"
	for {
		body := e.get(t, path+q, key).obj(t)
		for _, item := range body["data"].([]any) {
			out = append(out, item.(map[string]any))
		}
		next, ok := body["pagination"].(map[string]any)["next_cursor"].(string)
		if !ok {
			return out
		}
		q = "?limit=200&cursor=" + next
	}
}

func accountsOf(t *testing.T, e *env, key string) map[string]bool {
	t.Helper()
	m := map[string]bool{}
	for _, v := range e.get(t, "/v1/explorer/dimensions/billing_account_name/values", key).dataObj(t)["values"].([]any) {
		m[v.(string)] = true
	}
	return m
}

func TestRecommendationData(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	idRe := regexp.MustCompile(`^rec-[a-z0-9]+-[a-z]+-[a-z0-9]{8}$`)
	regionRe := regexp.MustCompile(`^(us|eu|ap)-[a-z]+-\d$`)
	for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
		accounts := accountsOf(t, e, key)
		recs := e.all(t, key, "/v1/recommendations")
		prev := math.Inf(1)
		names := map[string]bool{}
		for _, r := range recs {
			what := fmt.Sprint(r["recommendation_id"])
			if !idRe.MatchString(r["recommendation_id"].(string)) {
				t.Errorf("%s: id format", what)
			}
			s := r["estimated_monthly_savings"].(float64)
			cents(t, s)
			if s <= 0 || s > prev {
				t.Errorf("%s: savings %v (previous %v): want positive, sorted descending", what, s, prev)
			}
			prev = s
			if e := r["implementation_effort"]; e != "Low" && e != "Medium" && e != "High" {
				t.Errorf("%s: effort %v", what, e)
			}
			if !accounts[r["account_name"].(string)] {
				t.Errorf("%s: account %v is not an account of the organization", what, r["account_name"])
			}
			if !regionRe.MatchString(r["region"].(string)) {
				t.Errorf("%s: region %v", what, r["region"])
			}
			for _, f := range []string{"recommendation_name", "category", "action_type", "resource_id", "service", "status"} {
				if r[f] == "" {
					t.Errorf("%s: empty %s", what, f)
				}
			}
			if arn, ok := r["resource_id"].(string); ok && strings.HasPrefix(arn, "arn:aws:") && !strings.HasPrefix(arn, "arn:aws:route53") &&
				!strings.Contains(arn, ":"+r["region"].(string)+":") {
				t.Errorf("%s: resource %s is not in region %v", what, arn, r["region"])
			}
			if r["currency"] != "USD" {
				t.Errorf("%s: currency %v", what, r["currency"])
			}
			if !matchesKind(r["created_at"], kTimestamp) || r["created_at"].(string) > "2026-11-20T23:59:59.999Z" {
				t.Errorf("%s: created_at %v", what, r["created_at"])
			}
			if !matchesKind(r["lookback_days"], kInteger) {
				t.Errorf("%s: lookback_days %v", what, r["lookback_days"])
			}
			names[r["recommendation_name"].(string)] = true
		}
		if len(names) < 10 {
			t.Errorf("%s: only %d kinds of recommendation", key, len(names))
		}
	}
}

func TestAnomalyData(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
		accounts := accountsOf(t, e, key)
		prevStart := "9999-12-31"
		for _, a := range e.all(t, key, "/v1/anomalies") {
			what := fmt.Sprint(a["anomaly_id"])
			if !strings.HasPrefix(what, "anom-") {
				t.Errorf("%s: id prefix", what)
			}
			start, end := a["start_date"].(string), a["end_date"].(string)
			if start > end || end > "2026-11-20" || start < "2025-01-01" {
				t.Errorf("%s: %s to %s", what, start, end)
			}
			if start > prevStart {
				t.Errorf("%s: not sorted by start_date descending", what)
			}
			prevStart = start
			sc, sm := a["score_current"].(float64), a["score_max"].(float64)
			if !(0 < sc && sc <= sm && sm <= 1) {
				t.Errorf("%s: scores current %v max %v", what, sc, sm)
			}
			actual, expected := cents(t, a["impact_actual_spend"]), cents(t, a["impact_expected_spend"])
			total, mx := cents(t, a["impact_total"]), cents(t, a["impact_max"])
			if actual-expected != total || total <= 0 {
				t.Errorf("%s: actual %d − expected %d != total %d", what, actual, expected, total)
			}
			if mx <= 0 || mx > total {
				t.Errorf("%s: impact_max %d, total %d", what, mx, total)
			}
			days := int64(day(end).Sub(day(start)).Hours()/24) + 1
			if mx*days < total {
				t.Errorf("%s: impact_max %d × %d days < total %d", what, mx, days, total)
			}
			if pct := a["impact_pct"].(float64); math.Abs(pct-float64(total)/float64(expected)*100) > 0.006 {
				t.Errorf("%s: impact_pct %v, want %v", what, pct, float64(total)/float64(expected)*100)
			}
			if !accounts[a["account_name"].(string)] {
				t.Errorf("%s: account %v", what, a["account_name"])
			}
			created, _ := time.Parse(time.RFC3339, a["created_at"].(string))
			if created.Before(day(end)) || created.After(asOf.Add(24*time.Hour)) {
				t.Errorf("%s: created_at %v for end %s", what, created, end)
			}
			if s := a["detection_source"]; s != "aws" && s != "platform" {
				t.Errorf("%s: detection_source %v", what, s)
			}
		}
	}
}

func TestNotificationData(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	cronRe := regexp.MustCompile(`^(\d{1,2}) (\d{1,2}) \* \* ([0-6])$`)
	idRe := regexp.MustCompile(`^cl[0-9a-z]{23}$`)
	for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
		prevCreated := ""
		for _, n := range e.all(t, key, "/v1/notifications/scheduled") {
			what := fmt.Sprint(n["id"])
			if !idRe.MatchString(what) {
				t.Errorf("%s: id format", what)
			}
			if n["scheduleType"] != "recurring" || n["recurrenceFrequency"] != "weekly" || n["status"] != "pending" || n["recurrenceDayOfMonth"] != nil {
				t.Errorf("%s: %v %v %v %v", what, n["scheduleType"], n["recurrenceFrequency"], n["status"], n["recurrenceDayOfMonth"])
			}
			m := cronRe.FindStringSubmatch(n["cronExpression"].(string))
			if m == nil {
				t.Errorf("%s: cron %v", what, n["cronExpression"])
				continue
			}
			var minute, hour, wd int
			fmt.Sscan(m[1], &minute)
			fmt.Sscan(m[2], &hour)
			fmt.Sscan(m[3], &wd)
			if float64(wd) != n["recurrenceWeekday"] {
				t.Errorf("%s: cron weekday %d, recurrenceWeekday %v", what, wd, n["recurrenceWeekday"])
			}
			loc, err := time.LoadLocation(n["recurrenceTimezone"].(string))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			at, _ := time.Parse(time.RFC3339, n["scheduledAt"].(string))
			local := at.In(loc)
			if int(local.Weekday()) != wd || local.Hour() != hour || local.Minute() != minute {
				t.Errorf("%s: scheduledAt %v is %v in %v, cron %v", what, at, local, loc, n["cronExpression"])
			}
			if !at.After(asOf.Add(24*time.Hour)) || at.After(asOf.AddDate(0, 0, 9)) {
				t.Errorf("%s: scheduledAt %v is not the next occurrence", what, at)
			}
			created, updated := n["createdAt"].(string), n["updatedAt"].(string)
			if created > updated {
				t.Errorf("%s: createdAt %s after updatedAt %s", what, created, updated)
			}
			if created < prevCreated {
				t.Errorf("%s: list not in creation order", what)
			}
			prevCreated = created
			if sent, ok := n["sentAt"].(string); ok {
				st, _ := time.Parse(time.RFC3339, sent)
				if sent < created || !st.Before(at) || st.In(loc).Weekday() != time.Weekday(wd) || st.In(loc).Hour() != hour {
					t.Errorf("%s: sentAt %s does not fit the schedule", what, sent)
				}
			}
			if (n["errorMessage"] == nil) != (n["nextAttemptAt"] == nil) {
				t.Errorf("%s: errorMessage %v with nextAttemptAt %v", what, n["errorMessage"], n["nextAttemptAt"])
			}
			if !strings.Contains(n["recipientEmail"].(string), "@") {
				t.Errorf("%s: recipient %v", what, n["recipientEmail"])
			}
			subject := n["subject"].(string)
			switch {
			case n["explorerReportId"] != nil && !strings.HasPrefix(subject, "Weekly report: "),
				n["canvasId"] != nil && !strings.HasPrefix(subject, "Weekly canvas report: "):
				t.Errorf("%s: subject %q does not fit report %v canvas %v", what, subject, n["explorerReportId"], n["canvasId"])
			}
		}
	}
}

// TestIDsUnique checks that no id repeats, within or across organizations.
func TestIDsUnique(t *testing.T) {
	t.Parallel()
	s := sim.New(sim.Options{})
	seen := map[string]string{}
	for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
		for _, c := range []string{"budgets", "recommendations", "anomalies", "notifications"} {
			for _, id := range s.IDs(key, c) {
				where := key + "/" + c
				if prev, dup := seen[id]; dup {
					t.Errorf("id %s in %s and %s", id, prev, where)
				}
				seen[id] = where
			}
		}
	}
	e := newEnv(t, sim.Options{})
	for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
		names := map[string]bool{}
		for _, b := range e.all(t, key, "/v1/budgets") {
			if names[b["name"].(string)] {
				t.Errorf("%s: budget name %v repeats", key, b["name"])
			}
			names[b["name"].(string)] = true
			if b["createdAt"].(string) > b["updatedAt"].(string) || !strings.HasSuffix(b["startDate"].(string), "-01") {
				t.Errorf("%s: %v", key, b)
			}
		}
	}
}
