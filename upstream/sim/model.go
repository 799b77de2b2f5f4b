package sim

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// org is one organization. Seeded collections other than budgets never change
// and are read without a lock; budgets, idempotency records and the id
// generator for writes sit behind mu, so writes to one organization serialize.
type org struct {
	id       string
	name     string
	clientID int
	entitled bool
	costs    *costTable
	reports  []*report
	users    []*user

	recommendations []recommendation
	anomalies       []anomaly
	notifications   []notification

	mu      sync.RWMutex
	budgets []*budget          // list order: oldest first, new ones at the end
	byID    map[string]*budget // the same budgets by id
	nextSeq int64              // sequence number of the next created budget
	rng     *rand.Rand         // ids of created budgets and rows
	idem    map[string]map[string]*idemEntry

	cacheMu sync.Mutex
	served  map[string]bool // Explorer queries already answered, for servedFromCache
}

// apiKey is a demo API key.
type apiKey struct {
	key    string
	org    *org
	user   *user
	scopes map[string]bool
}

// user is a member of an organization, the creator of budgets.
type user struct {
	id, firstName, lastName, email string
}

// report is an Explorer report a budget is based on.
type report struct {
	id, name, focus string
	column          int
	values          []string
}

func (o *org) report(id string) *report {
	for _, r := range o.reports {
		if r.id == id {
			return r
		}
	}
	return nil
}

// servedBefore records that an Explorer query was answered and reports
// whether it had been answered before.
func (o *org) servedBefore(key string) bool {
	o.cacheMu.Lock()
	defer o.cacheMu.Unlock()
	if o.served[key] {
		return true
	}
	if len(o.served) >= maxServed {
		// Bound memory under endless distinct queries: forget them all,
		// as a real cache would evict.
		clear(o.served)
	}
	o.served[key] = true
	return false
}

// maxServed bounds the queries remembered for servedFromCache per
// organization.
const maxServed = 100_000

// recommendation is the contract's Recommendation record plus a few fields an
// open object may carry.
type recommendation struct {
	seq                     int64
	RecommendationID        string    `json:"recommendation_id"`
	RecommendationName      string    `json:"recommendation_name"`
	EstimatedMonthlySavings dec2      `json:"estimated_monthly_savings"`
	ImplementationEffort    string    `json:"implementation_effort"`
	Category                string    `json:"category"`
	ActionType              string    `json:"action_type"`
	AccountName             string    `json:"account_name"`
	Region                  string    `json:"region"`
	ResourceID              string    `json:"resource_id"`
	Service                 string    `json:"service"`
	Currency                string    `json:"currency"`
	Status                  string    `json:"status"`
	CreatedAt               timestamp `json:"created_at"`
	LookbackDays            int       `json:"lookback_days"`
}

// anomaly is the contract's Anomaly record plus a few extra fields.
type anomaly struct {
	seq                 int64
	AnomalyID           string    `json:"anomaly_id"`
	Service             string    `json:"service"`
	StartDate           date      `json:"start_date"`
	EndDate             date      `json:"end_date"`
	ScoreCurrent        dec2      `json:"score_current"`
	ScoreMax            dec2      `json:"score_max"`
	ImpactMax           dec2      `json:"impact_max"`
	ImpactTotal         dec2      `json:"impact_total"`
	ImpactPct           dec2      `json:"impact_pct"`
	ImpactActualSpend   dec2      `json:"impact_actual_spend"`
	ImpactExpectedSpend dec2      `json:"impact_expected_spend"`
	DimensionValue      string    `json:"dimension_value"`
	DetectionSource     string    `json:"detection_source"`
	AccountName         string    `json:"account_name"`
	Currency            string    `json:"currency"`
	Status              string    `json:"status"`
	CreatedAt           timestamp `json:"created_at"`
	LookbackDays        int       `json:"lookback_days"`
}

// notification is the contract's Scheduled notification record.
type notification struct {
	seq                      int64
	ID                       string     `json:"id"`
	RecipientEmail           string     `json:"recipientEmail"`
	Subject                  string     `json:"subject"`
	ScheduleType             string     `json:"scheduleType"`
	ScheduledAt              timestamp  `json:"scheduledAt"`
	RecurrenceFrequency      string     `json:"recurrenceFrequency"`
	RecurrenceTimezone       string     `json:"recurrenceTimezone"`
	RecurrenceWeekday        int        `json:"recurrenceWeekday"`
	RecurrenceDayOfMonth     *int       `json:"recurrenceDayOfMonth"`
	CronExpression           string     `json:"cronExpression"`
	Status                   string     `json:"status"`
	SentAt                   *timestamp `json:"sentAt"`
	ErrorMessage             *string    `json:"errorMessage"`
	NextAttemptAt            *timestamp `json:"nextAttemptAt"`
	CreatedAt                timestamp  `json:"createdAt"`
	UpdatedAt                timestamp  `json:"updatedAt"`
	CanvasID                 *string    `json:"canvasId"`
	ExplorerReportID         *string    `json:"explorerReportId"`
	IncludeAssistantAnalysis bool       `json:"includeAssistantAnalysis"`
}

// idemEntry is a stored response for one (API key, Idempotency-Key).
type idemEntry struct {
	fingerprint string
	status      int
	body        []byte
	stored      time.Time
}

// idempotencyTTL is how long a stored response is replayed.
const idempotencyTTL = 24 * time.Hour

// idempotent runs a write once per (API key, Idempotency-Key): it checks the
// header and reads the body (answers of those checks are not stored), then,
// under the organization's write lock, replays a stored response, answers a
// conflict, or runs op and stores what it answered. Holding the lock across
// lookup, operation and store is what makes two concurrent requests with the
// same key safe: the second one waits and replays.
func (c *call) idempotent(op func(f *fields) response) response {
	key, bad := c.idempotencyKey()
	if bad != nil {
		return *bad
	}
	obj, canon, bad := c.readObject()
	if bad != nil {
		return *bad
	}
	fp := c.r.Method + " " + c.r.URL.Path + "\n" + canon
	o := c.org
	o.mu.Lock()
	defer o.mu.Unlock()
	now := c.s.now()
	byKey := o.idem[c.keyString()]
	if byKey == nil {
		byKey = map[string]*idemEntry{}
		o.idem[c.keyString()] = byKey
	}
	if e, ok := byKey[key]; ok {
		if now.Sub(e.stored) < idempotencyTTL {
			if e.fingerprint != fp {
				return c.fail(http.StatusConflict, "idempotency_conflict",
					"Idempotency-Key was already used with a different request")
			}
			r := response{status: e.status, body: append([]byte(nil), e.body...)}
			r.setHeader("Idempotent-Replayed", "true")
			return r
		}
		delete(byKey, key)
	}
	resp := op(newFields(obj, ""))
	for k, e := range byKey { // expired entries go, so the store stays bounded by a day of writes
		if now.Sub(e.stored) >= idempotencyTTL {
			delete(byKey, k)
		}
	}
	byKey[key] = &idemEntry{fingerprint: fp, status: resp.status, body: append([]byte(nil), resp.body...), stored: now}
	return resp
}

// keyString returns the caller's API key, the scope of idempotency keys.
func (c *call) keyString() string { return c.key.key }

// authenticate resolves the bearer key. Keys in the query string are never
// looked at.
func (s *Server) authenticate(r *http.Request, reqID string) (*apiKey, *response) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, token, _ := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		resp := errorResponse(reqID, http.StatusUnauthorized, "missing_credentials",
			"Missing API key: send Authorization: Bearer <API key>")
		return nil, &resp
	}
	k, ok := s.keys[token]
	if !ok || s.keyCtl.isRevoked(token) {
		resp := errorResponse(reqID, http.StatusUnauthorized, "invalid_credentials", "Invalid API key")
		return nil, &resp
	}
	return k, nil
}

// rawOrNull is a stored "any JSON" value; nil prints as null.
func rawOrNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || isJSONNull(v) {
		return nil
	}
	return v
}
