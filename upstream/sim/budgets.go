package sim

import (
	"encoding/json"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"
)

// budget is a stored budget. Planning figures are not stored: they are derived
// from the cost table, the start date, the lookback and the growth rate when
// the budget is read, so an update of any of those is reflected at once.
type budget struct {
	seq                 int64
	id                  string
	name                string
	targetType          string
	period              string
	status              string
	numberOfPeriods     int
	startDate           time.Time
	lookbackPeriod      *int
	budgetType          json.RawMessage
	startingValue       json.RawMessage
	customStartingValue json.RawMessage
	growthRate          json.RawMessage
	normalizationPeriod bool
	creator             *user
	report              *report
	rows                []*planningRow
	createdAt           time.Time
	updatedAt           time.Time
}

// planningRow is a row of a budget's planning grid: a part of the report's
// values.
type planningRow struct {
	id        string
	values    []string
	createdAt time.Time
}

// budgetRecord is the contract's Budget.
type budgetRecord struct {
	ID                  string           `json:"id"`
	Name                string           `json:"name"`
	TargetType          string           `json:"targetType"`
	Period              string           `json:"period"`
	Status              string           `json:"status"`
	NumberOfPeriods     int              `json:"numberOfPeriods"`
	StartDate           date             `json:"startDate"`
	EndDate             date             `json:"endDate"`
	LookbackPeriod      *int             `json:"lookbackPeriod"`
	BudgetType          json.RawMessage  `json:"budgetType"`
	StartingValue       json.RawMessage  `json:"startingValue"`
	CustomStartingValue json.RawMessage  `json:"customStartingValue"`
	GrowthRate          json.RawMessage  `json:"growthRate"`
	NormalizationPeriod bool             `json:"normalizationPeriod"`
	OrganizationID      string           `json:"organizationId"`
	ServiceClientID     int              `json:"serviceClientId"`
	CreatorID           string           `json:"creatorId"`
	ExplorerReportID    string           `json:"explorerReportId"`
	CreatedAt           timestamp        `json:"createdAt"`
	UpdatedAt           timestamp        `json:"updatedAt"`
	ExplorerReport      reportRef        `json:"explorerReport"`
	Creator             creatorRecord    `json:"creator"`
	Plannings           []planningRecord `json:"plannings"`
}

type reportRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type creatorRecord struct {
	ID        string `json:"id"`
	FirstName string `json:"firstName"`
	LastName  string `json:"lastName"`
	Email     string `json:"email"`
}

// planningRecord is the contract's Planning record.
type planningRecord struct {
	ID            string          `json:"id"`
	BudgetID      string          `json:"budgetId"`
	Dimension1    string          `json:"dimension1"`
	Dimension2    string          `json:"dimension2"`
	PreviousMonth dec2            `json:"previousMonth"`
	AvgLookback   dec2            `json:"avgLookback"`
	PercentGrowth int             `json:"percentGrowth"`
	PercentSpend  *dec2           `json:"percentSpend"`
	TargetItems   map[string]dec2 `json:"targetItems"`
	TargetType    string          `json:"targetType"`
	CreatedAt     timestamp       `json:"createdAt"`
}

// periodMonths is the length of a budget period in months.
func periodMonths(period string) int {
	switch period {
	case "QUARTERLY":
		return 3
	case "YEARLY":
		return 12
	}
	return 1
}

// endDate is the first day of the last period.
func (b *budget) endDate() time.Time {
	return b.startDate.AddDate(0, periodMonths(b.period)*(b.numberOfPeriods-1), 0)
}

// lookback is L: the lookbackPeriod, 3 when null.
func (b *budget) lookback() int {
	if b.lookbackPeriod != nil {
		return *b.lookbackPeriod
	}
	return 3
}

// growth is the percentGrowth of every row: the numeric growthRate rounded to
// an integer and clamped to 0–12, else 0.
func (b *budget) growth() int {
	if len(b.growthRate) == 0 {
		return 0
	}
	var x any
	if json.Unmarshal(b.growthRate, &x) != nil {
		return 0
	}
	f, ok := x.(float64)
	if !ok {
		return 0
	}
	switch {
	case f <= 0 || f != f:
		return 0
	case f >= 12:
		return 12
	}
	return int(f + 0.5)
}

// budgetPlan holds the derived planning figures of a budget, in cents.
type budgetPlan struct {
	records []planningRecord
	targets []int64 // per row: Σ targetItems (monthly)
}

// planning derives the planning grid of b from the cost table.
func (o *org) planning(b *budget) budgetPlan {
	t := o.costs
	col := b.report.column
	s := b.startDate
	L := b.lookback()
	g := int64(b.growth())
	prevFrom, prevTo := s.AddDate(0, -1, 0), s.AddDate(0, 0, -1)
	lbFrom := s.AddDate(0, -L, 0)

	type rowFig struct {
		prev, lbSum int64
		targets     map[string]dec2
		targetSum   int64
	}
	figs := make([]rowFig, len(b.rows))
	var budgetPrev int64
	for i, r := range b.rows {
		f := rowFig{targets: map[string]dec2{}}
		for _, v := range r.values {
			f.prev += t.valueCost(col, v, prevFrom, prevTo)
			sum := t.valueCost(col, v, lbFrom, prevTo)
			f.lbSum += sum
			target := roundDiv(roundDiv(sum, int64(L))*(100+g), 100)
			f.targets[v] = dec2(target)
			f.targetSum += target
		}
		budgetPrev += f.prev
		figs[i] = f
	}
	p := budgetPlan{records: make([]planningRecord, len(b.rows)), targets: make([]int64, len(b.rows))}
	for i, r := range b.rows {
		f := figs[i]
		var spend *dec2
		if budgetPrev != 0 {
			v := dec2(roundDiv(f.prev*10000, budgetPrev))
			spend = &v
		}
		p.records[i] = planningRecord{
			ID: r.id, BudgetID: b.id, Dimension1: columnName(col), Dimension2: "",
			PreviousMonth: dec2(f.prev), AvgLookback: dec2(roundDiv(f.lbSum, int64(L))),
			PercentGrowth: int(g), PercentSpend: spend, TargetItems: f.targets,
			TargetType: "PLANNING_ITEM", CreatedAt: timestamp(r.createdAt),
		}
		p.targets[i] = f.targetSum
	}
	return p
}

// record renders b as the contract's Budget.
func (o *org) record(b *budget, p budgetPlan) budgetRecord {
	return budgetRecord{
		ID: b.id, Name: b.name, TargetType: b.targetType, Period: b.period, Status: b.status,
		NumberOfPeriods: b.numberOfPeriods, StartDate: date(b.startDate), EndDate: date(b.endDate()),
		LookbackPeriod: b.lookbackPeriod, BudgetType: rawOrNull(b.budgetType),
		StartingValue: rawOrNull(b.startingValue), CustomStartingValue: rawOrNull(b.customStartingValue),
		GrowthRate: rawOrNull(b.growthRate), NormalizationPeriod: b.normalizationPeriod,
		OrganizationID: o.id, ServiceClientID: o.clientID, CreatorID: b.creator.id,
		ExplorerReportID: b.report.id, CreatedAt: timestamp(b.createdAt), UpdatedAt: timestamp(b.updatedAt),
		ExplorerReport: reportRef{b.report.id, b.report.name},
		Creator:        creatorRecord{b.creator.id, b.creator.firstName, b.creator.lastName, b.creator.email},
		Plannings:      p.records,
	}
}

// actualsRecord is the actuals answer: the cost per planning row and period
// for every period that has started by AsOf.
type actualsRecord struct {
	ActualsByPlanning      map[string]map[string]dec2 `json:"actualsByPlanning"`
	AccountActualsByPeriod map[string]dec2            `json:"accountActualsByPeriod"`
}

// actuals computes the actuals of b and their total over all periods.
func (o *org) actuals(b *budget, asOf time.Time) (actualsRecord, int64) {
	a := actualsRecord{ActualsByPlanning: map[string]map[string]dec2{}, AccountActualsByPeriod: map[string]dec2{}}
	for _, r := range b.rows {
		a.ActualsByPlanning[r.id] = map[string]dec2{}
	}
	months := periodMonths(b.period)
	var total int64
	for i := range b.numberOfPeriods {
		from := b.startDate.AddDate(0, months*i, 0)
		if from.After(asOf) {
			break
		}
		to := from.AddDate(0, months, -1)
		key := from.Format("2006-01")
		var sum int64
		for _, r := range b.rows {
			var v int64
			for _, val := range r.values {
				v += o.costs.valueCost(b.report.column, val, from, to)
			}
			a.ActualsByPlanning[r.id][key] = dec2(v)
			sum += v
		}
		a.AccountActualsByPeriod[key] = dec2(sum)
		total += sum
	}
	return a, total
}

// findBudget returns a budget of the organization; the caller holds o.mu.
func (o *org) findBudget(id string) *budget { return o.byID[id] }

func listBudgets(c *call) response {
	o := c.org
	o.mu.RLock()
	defer o.mu.RUnlock()
	start, end, p, bad := c.pageOf(len(o.budgets), func(i int) int64 { return o.budgets[i].seq }, false)
	if bad != nil {
		return *bad
	}
	data := make([]budgetRecord, 0, end-start)
	for _, b := range o.budgets[start:end] {
		data = append(data, o.record(b, o.planning(b)))
	}
	return c.list(data, p)
}

// onBudget answers with do of the budget of the path's {id}, or 404 when
// the organization has none so named; the caller holds c.org.mu.
func (c *call) onBudget(do func(o *org, b *budget) response) response {
	b := c.org.findBudget(c.params["id"])
	if b == nil {
		return c.notFound("Budget")
	}
	return do(c.org, b)
}

// readBudget is onBudget under the organization's read lock.
func readBudget(c *call, read func(o *org, b *budget) response) response {
	c.org.mu.RLock()
	defer c.org.mu.RUnlock()
	return c.onBudget(read)
}

// budgetAnswer is the answer of a create or update: the budget written.
func (c *call) budgetAnswer(o *org, b *budget) response {
	return c.ok(struct {
		Budget budgetRecord `json:"budget"`
	}{o.record(b, o.planning(b))})
}

func getBudget(c *call) response {
	return readBudget(c, func(o *org, b *budget) response {
		p := o.planning(b)
		var totalTarget int64
		for _, t := range p.targets {
			totalTarget += t
		}
		totalTarget *= int64(periodMonths(b.period) * b.numberOfPeriods)
		_, totalActual := o.actuals(b, c.s.asOf)
		type metrics struct {
			TotalTarget dec2 `json:"totalTarget"`
			TotalActual dec2 `json:"totalActual"`
			Variance    dec2 `json:"variance"`
		}
		type dimension struct {
			Name   string   `json:"name"`
			Values []string `json:"values"`
		}
		return c.ok(struct {
			Budget     budgetRecord `json:"budget"`
			Metrics    metrics      `json:"metrics"`
			Dimensions []dimension  `json:"dimensions"`
		}{
			Budget:     o.record(b, p),
			Metrics:    metrics{dec2(totalTarget), dec2(totalActual), dec2(totalTarget - totalActual)},
			Dimensions: []dimension{{columnName(b.report.column), append([]string{}, b.report.values...)}},
		})
	})
}

func getBudgetActuals(c *call) response {
	return readBudget(c, func(o *org, b *budget) response {
		a, _ := o.actuals(b, c.s.asOf)
		return c.ok(a)
	})
}

func getBudgetPlanning(c *call) response {
	return readBudget(c, func(o *org, b *budget) response {
		return c.ok(struct {
			Plannings []planningRecord `json:"plannings"`
		}{o.planning(b).records})
	})
}

// budgetWrite is what a create or update body asks for; nil means absent.
type budgetWrite struct {
	name, period, status, targetType *string
	numberOfPeriods                  *int
	startDate                        *time.Time
	report                           *report
	lookbackSet                      bool
	lookbackPeriod                   *int
	anyJSON                          map[string]json.RawMessage // budgetType, startingValue, ...
	normalizationPeriod              *bool
}

// readBudgetWrite checks the budget fields of a create or update body. It
// reads every known field so that the first error, in a fixed order, names
// the offending field; unknown fields are ignored.
func readBudgetWrite(f *fields, o *org) budgetWrite {
	var w budgetWrite
	if s, ok := f.str("name"); ok {
		if strings.TrimSpace(s) == "" || utf8.RuneCountInString(s) > 200 {
			f.failf("name", "must be 1 to 200 characters")
		}
		w.name = &s
	}
	if s, ok := f.oneOf("targetType", "BUDGET"); ok {
		w.targetType = &s
	}
	if s, ok := f.oneOf("period", "MONTHLY", "QUARTERLY", "YEARLY"); ok {
		w.period = &s
	}
	if s, ok := f.oneOf("status", "DRAFT", "ACTIVE"); ok {
		w.status = &s
	}
	if n, ok := f.integer("numberOfPeriods", 1, 60); ok {
		v := int(n)
		w.numberOfPeriods = &v
	}
	if d, ok := f.date("startDate"); ok {
		if d.Day() != 1 || d.Year() < 2000 || d.Year() > 2099 {
			f.failf("startDate", "must be the first day of a month from 2000 to 2099")
		}
		w.startDate = &d
	}
	if id, ok := f.str("explorerReportId"); ok {
		w.report = o.report(id)
		if w.report == nil {
			f.failf("explorerReportId", "must be the id of an Explorer report of the organization")
		}
	}
	if f.has("lookbackPeriod") {
		w.lookbackSet = true
		if !f.isNull("lookbackPeriod") {
			if n, ok := f.integer("lookbackPeriod", 1, 24); ok {
				v := int(n)
				w.lookbackPeriod = &v
			}
		}
	}
	w.anyJSON = map[string]json.RawMessage{}
	for _, name := range []string{"budgetType", "startingValue", "customStartingValue", "growthRate"} {
		if v, ok := f.raw(name); ok {
			w.anyJSON[name] = rawOrNull(compactJSON(v))
		}
	}
	if v, ok := f.boolean("normalizationPeriod"); ok {
		w.normalizationPeriod = &v
	}
	return w
}

// apply writes the requested fields into b and reports whether the report
// changed (so the planning grid must be rebuilt).
func (w budgetWrite) apply(b *budget) (reportChanged bool) {
	setIfGiven(&b.name, w.name)
	setIfGiven(&b.targetType, w.targetType)
	setIfGiven(&b.period, w.period)
	setIfGiven(&b.status, w.status)
	setIfGiven(&b.numberOfPeriods, w.numberOfPeriods)
	setIfGiven(&b.startDate, w.startDate)
	setIfGiven(&b.normalizationPeriod, w.normalizationPeriod)
	if w.report != nil && w.report != b.report {
		b.report = w.report
		reportChanged = true
	}
	if w.lookbackSet {
		b.lookbackPeriod = w.lookbackPeriod
	}
	for name, v := range w.anyJSON {
		switch name {
		case "budgetType":
			b.budgetType = v
		case "startingValue":
			b.startingValue = v
		case "customStartingValue":
			b.customStartingValue = v
		case "growthRate":
			b.growthRate = v
		}
	}
	return reportChanged
}

// setIfGiven sets *field to *v when the write gives v (v is not nil).
func setIfGiven[T any](field *T, v *T) {
	if v != nil {
		*field = *v
	}
}

// newRows builds the planning grid of a created budget: one row per two of
// the report's values, in report order.
func (o *org) newRows(g *gen, values []string, at time.Time) []*planningRow {
	var rows []*planningRow
	for i := 0; i < len(values); i += 2 {
		part := append([]string(nil), values[i:min(i+2, len(values))]...)
		rows = append(rows, &planningRow{id: g.id("pln_", 16), values: part, createdAt: at})
	}
	return rows
}

// writeTime returns the clock's time at the wire's millisecond precision.
func (s *Server) writeTime() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

func createBudget(c *call) response {
	return c.idempotent(func(f *fields) response {
		o := c.org
		f.require("name", "startDate", "numberOfPeriods", "explorerReportId")
		w := readBudgetWrite(f, o)
		if f.err != "" {
			return c.invalid(f.err)
		}
		now := c.s.writeTime()
		g := &gen{r: o.rng, ids: c.s.ids}
		b := &budget{
			seq: o.nextSeq, id: g.id("bud_", 16), targetType: "BUDGET", period: "MONTHLY", status: "DRAFT",
			creator: c.key.user, createdAt: now, updatedAt: now,
		}
		o.nextSeq++
		w.apply(b)
		b.rows = o.newRows(g, b.report.values, now)
		o.budgets = append(o.budgets, b)
		o.byID[b.id] = b
		return c.budgetAnswer(o, b)
	})
}

func updateBudget(c *call) response {
	return c.idempotent(func(f *fields) response {
		return c.onBudget(func(o *org, b *budget) response {
			w := readBudgetWrite(f, o)
			if f.err != "" {
				return c.invalid(f.err)
			}
			now := c.s.writeTime()
			if !now.After(b.updatedAt) {
				now = b.updatedAt.Add(time.Millisecond) // updatedAt always moves forward
			}
			if w.apply(b) {
				g := &gen{r: o.rng, ids: c.s.ids}
				b.rows = o.newRows(g, b.report.values, now)
			}
			b.updatedAt = now
			return c.budgetAnswer(o, b)
		})
	})
}

func deleteBudget(c *call) response {
	c.org.mu.Lock()
	defer c.org.mu.Unlock()
	return c.onBudget(func(o *org, b *budget) response {
		delete(o.byID, b.id)
		for i, x := range o.budgets {
			if x == b {
				o.budgets = append(o.budgets[:i:i], o.budgets[i+1:]...)
				break
			}
		}
		return c.ok(struct {
			Success bool `json:"success"`
		}{true})
	})
}

// lookbackEntry is one month of a lookback answer.
type lookbackEntry struct {
	PeriodKey string `json:"periodKey"`
	Actual    dec2   `json:"actual"`
	Projected *dec2  `json:"projected,omitempty"`
}

func monthStart(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// budgetLookbackGet answers the organization's total cost for the 6 whole
// months before AsOf's month with a least-squares projection through them.
func budgetLookbackGet(c *call) response {
	const n = 6
	first := monthStart(c.s.asOf).AddDate(0, -n, 0)
	ys := make([]int64, n)
	for i := range n {
		from := first.AddDate(0, i, 0)
		ys[i] = c.org.costs.totalCost(from, from.AddDate(0, 1, -1))
	}
	proj := leastSquares(ys)
	periods := make([]lookbackEntry, n)
	for i := range n {
		p := dec2(proj[i])
		periods[i] = lookbackEntry{first.AddDate(0, i, 0).Format("2006-01"), dec2(ys[i]), &p}
	}
	return c.ok(struct {
		Periods []lookbackEntry `json:"periods"`
	}{periods})
}

// leastSquares returns the value of the least-squares line through
// (i, ys[i]) at each i, rounded half away from zero to whole cents. It
// computes exactly in rationals so that the result does not depend on float
// rounding.
func leastSquares(ys []int64) []int64 {
	n := int64(len(ys))
	out := make([]int64, n)
	if n == 0 {
		return out
	}
	// With x centred as xi = 2i-(n-1): ŷ(x) = Σy/n + x·Σxy/Σx².
	var sy, sxy, sxx big.Int
	for i, y := range ys {
		x := big.NewInt(2*int64(i) - (n - 1))
		yy := big.NewInt(y)
		sy.Add(&sy, yy)
		sxy.Add(&sxy, new(big.Int).Mul(x, yy))
		sxx.Add(&sxx, new(big.Int).Mul(x, x))
	}
	for i := range ys {
		x := big.NewRat(2*int64(i)-(n-1), 1)
		v := new(big.Rat).SetFrac(&sy, big.NewInt(n))
		if sxx.Sign() != 0 {
			slope := new(big.Rat).SetFrac(&sxy, &sxx)
			v.Add(v, slope.Mul(slope, x))
		}
		out[i] = roundRat(v)
	}
	return out
}

// roundRat rounds half away from zero.
func roundRat(r *big.Rat) int64 {
	num, den := new(big.Int).Set(r.Num()), r.Denom()
	neg := num.Sign() < 0
	num.Abs(num)
	num.Mul(num, big.NewInt(2))
	num.Add(num, den)
	den2 := new(big.Int).Mul(den, big.NewInt(2))
	q := new(big.Int).Quo(num, den2)
	if neg {
		q.Neg(q)
	}
	return q.Int64()
}

// budgetLookbackPost answers the report's cost for the L months before the
// start date.
func budgetLookbackPost(c *call) response {
	obj, _, bad := c.readObject()
	if bad != nil {
		return *bad
	}
	f := newFields(obj, "")
	f.require("explorerReportId", "startDate")
	var rep *report
	if id, ok := f.str("explorerReportId"); ok {
		if rep = c.org.report(id); rep == nil {
			f.failf("explorerReportId", "must be the id of an Explorer report of the organization")
		}
	}
	start, _ := f.date("startDate")
	L := int64(3)
	if f.has("lookbackPeriod") && !f.isNull("lookbackPeriod") {
		if n, ok := f.integer("lookbackPeriod", 1, 24); ok {
			L = n
		}
	}
	f.oneOf("period", "MONTHLY", "QUARTERLY", "YEARLY")
	f.integer("numberOfPeriods", 1, 60)
	if f.err != "" {
		return c.invalid(f.err)
	}
	first := monthStart(start).AddDate(0, -int(L), 0)
	periods := make([]lookbackEntry, 0, L)
	for i := range int(L) {
		from := first.AddDate(0, i, 0)
		var sum int64
		for _, v := range rep.values {
			sum += c.org.costs.valueCost(rep.column, v, from, from.AddDate(0, 1, -1))
		}
		periods = append(periods, lookbackEntry{PeriodKey: from.Format("2006-01"), Actual: dec2(sum)})
	}
	return c.ok(struct {
		Periods []lookbackEntry `json:"periods"`
	}{periods})
}
