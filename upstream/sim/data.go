package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
)

// gen draws seeded values and unique ids.
type gen struct {
	r   *rand.Rand
	ids *idRegistry
}

const (
	base36 = "0123456789abcdefghijklmnopqrstuvwxyz"
	hexLow = "0123456789abcdef"
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)

// Sub-streams of an organization's generator, so that the size of one
// collection never shifts the values of another.
const (
	streamCosts = iota
	streamPeople
	streamBudgets
	streamRecommendations
	streamAnomalies
	streamNotifications
	streamWrites
)

func newGen(seed, orgStream, sub uint64, ids *idRegistry) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, orgStream<<8|sub)), ids: ids}
}

func (g *gen) token(n int, alphabet string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

// id returns prefix + n random base36 characters, never handed out before.
func (g *gen) id(prefix string, n int) string {
	for {
		id := prefix + g.token(n, base36)
		if g.ids.claim(id) {
			return id
		}
	}
}

func (g *gen) intn(n int) int {
	if n <= 0 {
		return 0
	}
	return g.r.IntN(n)
}

// between returns an integer in [lo, hi].
func (g *gen) between(lo, hi int) int { return lo + g.intn(hi-lo+1) }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func (g *gen) pick(xs []string) string { return xs[g.intn(len(xs))] }

// weighted returns an index drawn with the given weights.
func (g *gen) weighted(w []float64) int {
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	x := g.r.Float64() * sum
	for i, v := range w {
		if x < v {
			return i
		}
		x -= v
	}
	return len(w) - 1
}

// timeOfDay returns a random moment of day d, to the millisecond.
func (g *gen) timeOfDay(d time.Time) time.Time {
	return d.Add(time.Duration(g.r.Int64N(int64(24*time.Hour/time.Millisecond))) * time.Millisecond)
}

// buildOrgs generates the three organizations and the demo keys.
func buildOrgs(seed uint64, asOf time.Time, ids *idRegistry) ([]*org, map[string]*apiKey) {
	specs := orgSpecs()
	orgs := make([]*org, len(specs))
	for i, spec := range specs {
		orgs[i] = buildOrg(seed, asOf, spec, ids)
	}
	all := map[string]bool{}
	for _, s := range []string{scopeCostRead, scopeBudgetsRead, scopeBudgetsWrite, scopeReportsRead, scopeReportsWrite, scopeNotificationsRead} {
		all[s] = true
	}
	readOnly := map[string]bool{scopeCostRead: true, scopeBudgetsRead: true, scopeReportsRead: true, scopeNotificationsRead: true}
	keys := map[string]*apiKey{
		DemoKey:       {key: DemoKey, org: orgs[0], user: orgs[0].users[0], scopes: all},
		ReadOnlyKey:   {key: ReadOnlyKey, org: orgs[0], user: orgs[0].users[1], scopes: readOnly},
		OtherOrgKey:   {key: OtherOrgKey, org: orgs[1], user: orgs[1].users[0], scopes: all},
		UnentitledKey: {key: UnentitledKey, org: orgs[2], user: orgs[2].users[0], scopes: all},
	}
	return orgs, keys
}

func buildOrg(seed uint64, asOf time.Time, spec *orgSpec, ids *idRegistry) *org {
	o := &org{
		id: spec.id, name: spec.name, clientID: spec.clientID, entitled: spec.entitled,
		byID:    map[string]*budget{},
		nextSeq: 1,
		idem:    map[string]map[string]*idemEntry{},
		served:  map[string]bool{},
	}
	o.costs = buildCostTable(newGen(seed, spec.stream, streamCosts, ids).r, spec, asOf)

	g := newGen(seed, spec.stream, streamPeople, ids)
	for _, n := range spec.users {
		o.users = append(o.users, &user{
			id: g.id("usr_", 16), firstName: n[0], lastName: n[1],
			email: emailLocal(n[0]) + "." + emailLocal(n[1]) + "@" + spec.domain,
		})
	}
	for _, r := range spec.reports {
		o.reports = append(o.reports, &report{id: g.id("rpt_", 16), name: r.name, focus: r.focus, column: r.column, values: r.values})
	}

	seedBudgets(o, spec, newGen(seed, spec.stream, streamBudgets, ids), asOf)
	o.recommendations = seedRecommendations(o, spec, newGen(seed, spec.stream, streamRecommendations, ids), asOf)
	o.anomalies = seedAnomalies(o, spec, newGen(seed, spec.stream, streamAnomalies, ids), asOf)
	o.notifications = seedNotifications(o, spec, newGen(seed, spec.stream, streamNotifications, ids), asOf)
	o.rng = newGen(seed, spec.stream, streamWrites, ids).r
	return o
}

// emailLocal lowercases a name and folds the accents used in the catalogs.
func emailLocal(s string) string {
	return strings.NewReplacer("á", "a", "é", "e", "í", "i", "ó", "o", "ú", "u", "ñ", "n").Replace(strings.ToLower(s))
}

// monthsBetween counts whole months from a's month to b's month.
func monthsBetween(a, b time.Time) int {
	return (b.Year()-a.Year())*12 + int(b.Month()) - int(a.Month())
}

func seedBudgets(o *org, spec *orgSpec, g *gen, asOf time.Time) {
	if len(o.reports) == 0 {
		return
	}
	type pair struct{ team, report int }
	var pairs []pair
	for t := range spec.teams {
		for r := range o.reports {
			pairs = append(pairs, pair{t, r})
		}
	}
	g.r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	first := costTableStart()
	span := max(monthsBetween(first, asOf)+2, 0)
	var budgets []*budget
	for i := 0; i < spec.budgets && i < len(pairs); i++ {
		rep := o.reports[pairs[i].report]
		b := &budget{
			id: g.id("bud_", 16), targetType: "BUDGET", report: rep,
			creator: o.users[g.intn(len(o.users))],
		}
		L := 3
		if g.chance(0.6) {
			L = []int{3, 6, 12}[g.intn(3)]
			b.lookbackPeriod = &L
		}
		// Start late enough that the lookback months have cost data, so the
		// seeded targets are not zero.
		b.startDate = first.AddDate(0, g.between(min(L, span), span), 0)
		switch x := g.r.Float64(); {
		case x < 0.7:
			b.period = "MONTHLY"
			b.numberOfPeriods = []int{3, 6, 12, 12, 12, 18, 24}[g.intn(7)]
		case x < 0.9:
			b.period = "QUARTERLY"
			b.numberOfPeriods = []int{4, 4, 8}[g.intn(3)]
		default:
			b.period = "YEARLY"
			b.numberOfPeriods = g.between(1, 3)
		}
		b.name = fmt.Sprintf("%s %s Budget %d", spec.teams[pairs[i].team], rep.focus, b.startDate.Year())
		b.status = "ACTIVE"
		if b.startDate.After(asOf) && g.chance(0.6) || g.chance(0.1) {
			b.status = "DRAFT"
		}
		if g.chance(0.5) {
			b.growthRate = json.RawMessage(strconv.Itoa(g.between(0, 12)))
		}
		b.normalizationPeriod = g.chance(0.25)
		created := b.startDate.AddDate(0, 0, -g.between(5, 45))
		if latest := asOf.AddDate(0, 0, -g.between(1, 20)); created.After(latest) {
			created = latest
		}
		b.createdAt = g.timeOfDay(created)
		b.updatedAt = b.createdAt.Add(time.Duration(g.r.Int64N(int64(30*24*time.Hour/time.Millisecond))) * time.Millisecond)
		if end := asOf.Add(24*time.Hour - time.Millisecond); b.updatedAt.After(end) {
			b.updatedAt = end
		}
		if b.updatedAt.Before(b.createdAt) {
			b.updatedAt = b.createdAt
		}
		// Split the report's values into 2–5 disjoint, non-empty parts.
		vals := append([]string(nil), rep.values...)
		g.r.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		nRows := min(g.between(2, 5), len(vals))
		cuts := g.r.Perm(len(vals) - 1)[:nRows-1]
		for k := range cuts {
			cuts[k]++
		}
		sort.Ints(cuts)
		cuts = append(append([]int{0}, cuts...), len(vals))
		for k := 0; k+1 < len(cuts); k++ {
			b.rows = append(b.rows, &planningRow{id: g.id("pln_", 16), values: vals[cuts[k]:cuts[k+1]:cuts[k+1]], createdAt: b.createdAt})
		}
		budgets = append(budgets, b)
	}
	sort.SliceStable(budgets, func(i, j int) bool { return budgets[i].createdAt.Before(budgets[j].createdAt) })
	for i, b := range budgets {
		b.seq = int64(i + 1)
		o.byID[b.id] = b
	}
	o.budgets = budgets
	o.nextSeq = int64(len(budgets) + 1)
}

// cellsOf returns the cost cells of one service.
func (t *costTable) cellsOf(service int) []*costCell {
	var cs []*costCell
	for i := range t.cells {
		if t.cells[i].dims[colService] == service {
			cs = append(cs, &t.cells[i])
		}
	}
	return cs
}

// resourceCtx is what a resource id is built from.
type resourceCtx struct {
	region, account, env, workload, org string
}

// resourceID returns a realistic AWS resource identifier of a kind.
func (g *gen) resourceID(kind string, c resourceCtx) string {
	arn := func(service, rest string) string {
		return "arn:aws:" + service + ":" + c.region + ":" + c.account + ":" + rest
	}
	name := c.workload + "-" + c.env
	// The kinds whose id is, as EC2's are, a prefix and 16 hex digits.
	for _, k := range [...]struct{ kind, prefix string }{
		{"ec2-instance", "i-0"}, {"ebs-volume", "vol-0"}, {"ebs-snapshot", "snap-0"}, {"nat-gateway", "nat-0"},
		{"elastic-ip", "eipalloc-0"}, {"vpc", "vpc-0"}, {"efs-filesystem", "fs-0"},
	} {
		if kind == k.kind {
			return k.prefix + g.token(16, hexLow)
		}
	}
	switch kind {
	case "s3-bucket":
		return c.org + "-" + name + "-" + c.region + "-" + g.token(4, base36)
	case "rds-db":
		return arn("rds", "db:"+name+"-"+g.token(2, "0123456789"))
	case "eks-nodegroup":
		return arn("eks", "nodegroup/"+c.env+"-cluster/"+c.workload+"-ng/"+g.token(8, hexLow)+"-"+g.token(4, hexLow))
	case "lambda-function":
		return arn("lambda", "function:"+name+"-handler")
	case "cloudfront-distribution":
		return "E" + g.token(13, upper)
	case "dynamodb-table":
		return arn("dynamodb", "table/"+name)
	case "elasticache-cluster":
		return arn("elasticache", "cluster:"+name+"-cache-00"+strconv.Itoa(g.between(1, 3)))
	case "log-group":
		return arn("logs", "log-group:/aws/"+c.workload+"/"+c.env)
	case "redshift-cluster":
		return arn("redshift", "cluster:"+c.workload+"-warehouse-"+c.env)
	case "load-balancer":
		return arn("elasticloadbalancing", "loadbalancer/app/"+name+"-alb/"+g.token(16, hexLow))
	case "ecs-service":
		return arn("ecs", "service/"+c.env+"-cluster/"+name)
	case "opensearch-domain":
		return arn("es", "domain/"+name+"-logs")
	case "sqs-queue":
		return arn("sqs", name+"-queue")
	case "hosted-zone":
		return "arn:aws:route53:::hostedzone/Z" + g.token(20, upper)
	case "glue-job":
		return arn("glue", "job/"+name+"-etl")
	case "kinesis-stream":
		return arn("kinesis", "stream/"+name+"-stream")
	case "sagemaker-notebook":
		return arn("sagemaker", "notebook-instance/"+name+"-notebook")
	case "sagemaker-endpoint":
		return arn("sagemaker", "endpoint/"+name+"-endpoint")
	}
	return c.account // account-level recommendations (commitments)
}

// accountIDs returns a seeded 12-digit AWS account id per account.
func accountIDs(g *gen, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(g.between(1, 9)) + g.token(11, "0123456789")
	}
	return ids
}

func seedRecommendations(o *org, spec *orgSpec, g *gen, asOf time.Time) []recommendation {
	if spec.recommendations == 0 {
		return []recommendation{}
	}
	templates := recTemplates()
	acctIDs := accountIDs(g, len(spec.accounts))
	regionNames, regionWeights := regions()
	shares := make([]float64, len(spec.services))
	for i, s := range spec.services {
		shares[i] = s.share
	}
	slug := strings.ToLower(strings.Fields(spec.name)[0])
	recs := make([]recommendation, 0, spec.recommendations)
	for tries := 0; len(recs) < spec.recommendations && tries < 100*spec.recommendations; tries++ {
		si := g.weighted(shares)
		svc := spec.services[si]
		ts := templates[svc.name]
		cells := o.costs.cellsOf(si)
		if len(ts) == 0 || len(cells) == 0 {
			continue
		}
		t := ts[g.intn(len(ts))]
		cell := cells[g.intn(len(cells))]
		ai := cell.dims[colAccount]
		acct := spec.accounts[ai]
		region := regionNames[g.weighted(regionWeights)]
		save := t.minSave + (t.maxSave-t.minSave)*math.Pow(g.r.Float64(), 1.6)
		save *= 0.5 + acct.share*1.5
		status := []string{"open", "open", "open", "open", "open", "open", "open", "in_progress", "dismissed", "implemented"}[g.intn(10)]
		recs = append(recs, recommendation{
			RecommendationID:        g.id("rec-"+svc.slug+"-"+strings.ToLower(t.action)+"-", 8),
			RecommendationName:      t.name,
			EstimatedMonthlySavings: dec2(math.Round(save * 100)),
			ImplementationEffort:    t.effort,
			Category:                t.category,
			ActionType:              t.action,
			AccountName:             acct.name,
			Region:                  region,
			ResourceID: g.resourceID(t.resource, resourceCtx{
				region: region, account: acctIDs[ai], env: acct.env, workload: g.pick(workloads()), org: slug,
			}),
			Service:      svc.name,
			Currency:     "USD",
			Status:       status,
			CreatedAt:    timestamp(g.timeOfDay(asOf.AddDate(0, 0, -g.between(0, 120)))),
			LookbackDays: []int{14, 30, 30, 60}[g.intn(4)],
		})
	}
	// Biggest savings first, the order a cost team triages in.
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].EstimatedMonthlySavings != recs[j].EstimatedMonthlySavings {
			return recs[i].EstimatedMonthlySavings > recs[j].EstimatedMonthlySavings
		}
		return recs[i].RecommendationID < recs[j].RecommendationID
	})
	for i := range recs {
		recs[i].seq = int64(i + 1)
	}
	return recs
}

func seedAnomalies(o *org, spec *orgSpec, g *gen, asOf time.Time) []anomaly {
	t := o.costs
	if spec.anomalies == 0 || len(t.cells) == 0 || t.days < 8 {
		return []anomaly{}
	}
	regionNames, regionWeights := regions()
	out := make([]anomaly, 0, spec.anomalies)
	for tries := 0; len(out) < spec.anomalies && tries < 100*spec.anomalies; tries++ {
		cell := &t.cells[g.intn(len(t.cells))]
		svc := spec.services[cell.dims[colService]]
		acct := spec.accounts[cell.dims[colAccount]]
		dur := 1 + g.weighted([]float64{0.3, 0.25, 0.15, 0.1, 0.08, 0.07, 0.05})
		startIdx := g.intn(t.days - dur + 1)
		start := t.dayAt(startIdx)
		end := start.AddDate(0, 0, dur-1)
		expected := t.rangeSum(cell, costUnblended, start, end)
		if expected < 1000 {
			continue // an anomaly on a few dollars is noise, not an anomaly
		}
		pct := 0.12 + 1.6*math.Pow(g.r.Float64(), 2)
		total := int64(math.Round(float64(expected) * pct))
		actual := expected + total
		maxImpact := total
		if dur > 1 {
			perDay := float64(total) / float64(dur)
			maxImpact = min(total, int64(math.Ceil(perDay*(1+0.8*g.r.Float64()))))
		}
		status := "open"
		age := int(asOf.Sub(end).Hours() / 24)
		switch {
		case age > 21:
			status = []string{"resolved", "resolved", "resolved", "acknowledged"}[g.intn(4)]
		case age > 3:
			status = []string{"open", "acknowledged", "resolved"}[g.intn(3)]
		}
		scoreMax := int64(g.between(55, 99))
		scoreCur := scoreMax * int64(g.between(70, 100)) / 100
		if status == "resolved" {
			scoreCur = int64(g.between(5, int(scoreMax*6/10)))
		}
		kind := "spike"
		if dur > 2 {
			kind = "drift"
		}
		// Detection runs some hours after the last anomalous day, but never
		// after the data date's end.
		delay := g.between(6, 30)
		if end.Equal(asOf) {
			delay = g.between(1, 22)
		}
		created := end.Add(time.Duration(delay)*time.Hour + time.Duration(g.intn(3600))*time.Second)
		source := "aws"
		if g.chance(0.3) {
			source = "platform"
		}
		out = append(out, anomaly{
			AnomalyID:           g.id("anom-"+svc.slug+"-"+kind+"-", 8),
			Service:             svc.anomalyName,
			StartDate:           date(start),
			EndDate:             date(end),
			ScoreCurrent:        dec2(scoreCur),
			ScoreMax:            dec2(scoreMax),
			ImpactMax:           dec2(maxImpact),
			ImpactTotal:         dec2(total),
			ImpactPct:           dec2(roundDiv(total*10000, expected)),
			ImpactActualSpend:   dec2(actual),
			ImpactExpectedSpend: dec2(expected),
			DimensionValue:      regionNames[g.weighted(regionWeights)],
			DetectionSource:     source,
			AccountName:         acct.name,
			Currency:            "USD",
			Status:              status,
			CreatedAt:           timestamp(created),
			LookbackDays:        []int{30, 60, 90}[g.intn(3)],
		})
	}
	// Most recent first, as a detection feed reads.
	sort.SliceStable(out, func(i, j int) bool {
		a, b := time.Time(out[i].StartDate), time.Time(out[j].StartDate)
		if !a.Equal(b) {
			return a.After(b)
		}
		return out[i].AnomalyID < out[j].AnomalyID
	})
	for i := range out {
		out[i].seq = int64(i + 1)
	}
	return out
}

// loadZone loads a time zone; without a zone database the notification
// falls back to UTC and says so in its recurrenceTimezone, so the record stays
// self-consistent.
func loadZone(name string) (*time.Location, string) {
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC, "UTC"
	}
	return loc, name
}

func seedNotifications(o *org, spec *orgSpec, g *gen, asOf time.Time) []notification {
	if spec.notifications == 0 {
		return []notification{}
	}
	ref := asOf.AddDate(0, 0, 1) // the end of the last day with data: "now" for seeded schedules
	out := make([]notification, 0, spec.notifications)
	for range spec.notifications {
		loc, tzName := loadZone(g.pick(spec.timezones))
		weekday := g.between(1, 5)
		if g.chance(0.1) {
			weekday = []int{0, 6}[g.intn(2)]
		}
		hour, minute := g.between(6, 18), []int{0, 0, 15, 30, 45}[g.intn(5)]
		// The next occurrence of the schedule after ref, in the zone.
		local := ref.In(loc)
		var next time.Time
		for d := 0; d <= 7; d++ {
			c := time.Date(local.Year(), local.Month(), local.Day()+d, hour, minute, 0, 0, loc)
			if int(c.Weekday()) == weekday && c.After(ref) {
				next = c
				break
			}
		}
		created := g.timeOfDay(asOf.AddDate(0, 0, -g.between(3, 300)))
		n := notification{
			ID:                  g.id("cl", 23),
			ScheduleType:        "recurring",
			ScheduledAt:         timestamp(next),
			RecurrenceFrequency: "weekly",
			RecurrenceTimezone:  tzName,
			RecurrenceWeekday:   weekday,
			CronExpression:      fmt.Sprintf("%d %d * * %d", minute, hour, weekday),
			Status:              "pending",
			CreatedAt:           timestamp(created),
			UpdatedAt:           timestamp(created),
		}
		if g.chance(0.25) {
			n.RecipientEmail = "finops@" + spec.domain
		} else {
			n.RecipientEmail = o.users[g.intn(len(o.users))].email
		}
		switch x := g.r.Float64(); {
		case x < 0.4 && len(o.reports) > 0:
			r := o.reports[g.intn(len(o.reports))]
			n.ExplorerReportID = &r.id
			n.Subject = "Weekly report: " + r.name
		case x < 0.75 && len(spec.canvases) > 0:
			id := g.id("cl", 23)
			n.CanvasID = &id
			n.Subject = "Weekly canvas report: " + g.pick(spec.canvases)
		default:
			n.Subject = "Weekly cost digest"
		}
		n.IncludeAssistantAnalysis = g.chance(0.5)
		// Past deliveries, one week apart at the same local time.
		last := next.AddDate(0, 0, -7)
		before := next.AddDate(0, 0, -14)
		switch {
		case g.chance(0.1) && before.After(created):
			// The last delivery failed; the previous one went out. The next
			// attempt is the next occurrence.
			msg := "Temporary delivery failure: 451 4.7.1 Try again later"
			sent := timestamp(before.Add(time.Duration(g.between(2, 50)) * time.Second))
			retry := timestamp(next)
			n.SentAt, n.ErrorMessage, n.NextAttemptAt = &sent, &msg, &retry
			n.UpdatedAt = timestamp(last.Add(time.Duration(g.between(2, 50)) * time.Second))
		case last.After(created):
			sent := timestamp(last.Add(time.Duration(g.between(2, 50)) * time.Second))
			n.SentAt = &sent
			n.UpdatedAt = sent
		}
		out = append(out, n)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return time.Time(out[i].CreatedAt).Before(time.Time(out[j].CreatedAt))
	})
	for i := range out {
		out[i].seq = int64(i + 1)
	}
	return out
}
