package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/costgw/gateway/upstream/ops"
)

// maxRangeDays bounds an Explorer date range, inclusive.
const maxRangeDays = 366

// explorerQuery is a checked Explorer query body.
type explorerQuery struct {
	start, end  time.Time
	groupBy     int
	costType    int
	granularity string
	filters     []explorerFilter
	canonical   string // the normalized query, keying servedFromCache
}

// explorerFilter keeps or drops cost cells by the value of one column.
type explorerFilter struct {
	column int
	in     bool // "in" keeps listed values, "not_in" drops them
	values map[string]bool
}

// normalizedQuery is the canonical form of a query: only the fields that
// change the answer, so extra properties do not defeat the cache.
type normalizedQuery struct {
	Start       string             `json:"start"`
	End         string             `json:"end"`
	GroupBy     string             `json:"groupBy"`
	CostType    string             `json:"costType"`
	Granularity string             `json:"granularity"`
	Filters     []normalizedFilter `json:"filters"`
}

type normalizedFilter struct {
	Dimension string   `json:"dimension"`
	Operator  string   `json:"operator"`
	Values    []string `json:"values"`
}

// readExplorerQuery reads and checks the query body of the four POST
// Explorer operations.
func readExplorerQuery(c *call) (explorerQuery, *response) {
	var q explorerQuery
	obj, _, bad := c.readObject()
	if bad != nil {
		return q, bad
	}
	f := newFields(obj, "")
	f.require("dateRange", "groupBy", "costType", "granularity")
	var norm normalizedQuery
	if dr, ok := f.object("dateRange"); ok {
		dr.require("start", "end")
		s, okS := dr.date("start")
		e, okE := dr.date("end")
		if okS && okE {
			switch {
			case e.Before(s):
				f.failf("dateRange.end", "must not be before dateRange.start")
			case dayCount(s, e) > maxRangeDays:
				f.failf("dateRange", "must cover at most 366 days")
			}
			q.start, q.end = s, e
			norm.Start, norm.End = s.Format(dateLayout), e.Format(dateLayout)
		}
	}
	if s, ok := f.oneOf("groupBy", columnNames()...); ok {
		q.groupBy, _ = columnIndex(s)
		norm.GroupBy = s
	}
	if s, ok := f.oneOf("costType", costTypeNames()...); ok {
		q.costType, _ = costTypeIndex(s)
		norm.CostType = s
	}
	if s, ok := f.oneOf("granularity", "day", "week", "month"); ok {
		q.granularity = s
		norm.Granularity = s
	}
	norm.Filters = []normalizedFilter{}
	// A null filter list reads as empty: Go clients marshal a nil slice as null.
	if f.has("filters") && !f.isNull("filters") {
		items, _ := f.array("filters")
		for i, raw := range items {
			name := "filters[" + strconv.Itoa(i) + "]"
			var item map[string]json.RawMessage
			if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(raw, &item) != nil {
				f.failf(name, "must be an object with dimension, operator and values")
				break
			}
			fi := f.child(item, name)
			fi.require("dimension", "operator", "values")
			dim, okD := fi.oneOf("dimension", columnNames()...)
			op, okO := fi.oneOf("operator", "in", "not_in")
			vals, okV := fi.array("values")
			if !okD || !okO || !okV {
				break
			}
			ef := explorerFilter{in: op == "in", values: map[string]bool{}}
			ef.column, _ = columnIndex(dim)
			nf := normalizedFilter{Dimension: dim, Operator: op, Values: []string{}}
			for j, v := range vals {
				s, ok := jsonString(v)
				if !ok {
					fi.failf("values["+strconv.Itoa(j)+"]", "must be a string")
					break
				}
				ef.values[s] = true
				nf.Values = append(nf.Values, s)
			}
			q.filters = append(q.filters, ef)
			norm.Filters = append(norm.Filters, nf)
		}
	}
	if f.err != "" {
		r := c.invalid(f.err)
		return q, &r
	}
	b, _ := json.Marshal(norm)
	q.canonical = string(b)
	return q, nil
}

// dayCount is the number of days in [a, b].
func dayCount(a, b time.Time) int { return int((b.Unix()-a.Unix())/86400) + 1 }

// keeps reports whether a cost cell passes every filter (filters are ANDed).
func (q *explorerQuery) keeps(t *costTable, c *costCell) bool {
	for _, f := range q.filters {
		if f.values[t.value(c, f.column)] != f.in {
			return false
		}
	}
	return true
}

// cached reports whether the organization answered this operation and query
// before, and remembers that it now has.
func (c *call) cached(op, query string) bool { return c.org.servedBefore(op + "\n" + query) }

type summaryCard struct {
	Title         string `json:"title"`
	Description   string `json:"description"`
	Value         dec2   `json:"value"`
	PreviousValue dec2   `json:"previousValue"`
}

// totals is what summary and previous-period share: the totals of the range
// and of the same number of days just before it, per group.
type totals struct {
	days                int
	current, previous   int64
	groupCur, groupPrev map[string]int64
}

func (q *explorerQuery) totals(t *costTable) totals {
	days := dayCount(q.start, q.end)
	pStart, pEnd := q.start.AddDate(0, 0, -days), q.start.AddDate(0, 0, -1)
	r := totals{days: days, groupCur: map[string]int64{}, groupPrev: map[string]int64{}}
	for i := range t.cells {
		c := &t.cells[i]
		if !q.keeps(t, c) {
			continue
		}
		g := t.value(c, q.groupBy)
		cur := t.rangeSum(c, q.costType, q.start, q.end)
		prev := t.rangeSum(c, q.costType, pStart, pEnd)
		r.current += cur
		r.previous += prev
		r.groupCur[g] += cur
		r.groupPrev[g] += prev
	}
	return r
}

func explorerSummary(c *call) response {
	q, bad := readExplorerQuery(c)
	if bad != nil {
		return *bad
	}
	tt := q.totals(c.org.costs)
	label := costTypeLabel(q.costType)
	top, topCost := "", int64(0)
	for g, v := range tt.groupCur {
		if v > topCost || (v == topCost && v > 0 && g < top) {
			top, topCost = g, v
		}
	}
	topDesc := "No " + label + " in the selected range"
	if top != "" {
		topDesc = top + " had the highest " + label + " in the selected range"
	}
	days := int64(tt.days)
	cards := []summaryCard{
		{
			Title:         "Total cost",
			Description:   "Total " + label + " from " + q.start.Format(dateLayout) + " to " + q.end.Format(dateLayout),
			Value:         dec2(tt.current),
			PreviousValue: dec2(tt.previous),
		},
		{
			Title:         "Average daily cost",
			Description:   "Average daily " + label + " over " + strconv.FormatInt(days, 10) + " days",
			Value:         dec2(roundDiv(tt.current, days)),
			PreviousValue: dec2(roundDiv(tt.previous, days)),
		},
		{
			Title:         "Top " + columnName(q.groupBy),
			Description:   topDesc,
			Value:         dec2(topCost),
			PreviousValue: dec2(tt.groupPrev[top]),
		},
	}
	return c.ok(struct {
		Cards           []summaryCard `json:"cards"`
		ServedFromCache bool          `json:"servedFromCache"`
	}{cards, c.cached(ops.ExplorerSummary, q.canonical)})
}

func explorerPreviousPeriod(c *call) response {
	q, bad := readExplorerQuery(c)
	if bad != nil {
		return *bad
	}
	tt := q.totals(c.org.costs)
	var change int64
	if tt.previous != 0 {
		change = roundDiv((tt.current-tt.previous)*10000, tt.previous)
	}
	return c.ok(struct {
		CurrentTotal    dec2 `json:"currentTotal"`
		PreviousTotal   dec2 `json:"previousTotal"`
		ChangePercent   dec2 `json:"changePercent"`
		ServedFromCache bool `json:"servedFromCache"`
	}{dec2(tt.current), dec2(tt.previous), dec2(change), c.cached(ops.ExplorerPreviousPeriod, q.canonical)})
}

// bucketStart returns the first day of d's bucket: the day itself, its ISO
// week's Monday, or the first of its month.
func bucketStart(d time.Time, granularity string) time.Time {
	switch granularity {
	case "week":
		return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
	case "month":
		return monthStart(d)
	}
	return d
}

// numericDate is the YYYYMMDD number the history time column holds.
func numericDate(d time.Time) int { return d.Year()*10000 + int(d.Month())*100 + d.Day() }

// historyRow is one (group, bucket) cost; its first key is the group-by
// column's name, so it marshals by hand.
type historyRow struct {
	column string
	group  string
	date   int
	cost   dec2
}

// MarshalJSON writes {"<column>":"<group>","usage_date":N,"cost":n}.
func (h historyRow) MarshalJSON() ([]byte, error) {
	col, err := json.Marshal(h.column)
	if err != nil {
		return nil, err
	}
	grp, err := json.Marshal(h.group)
	if err != nil {
		return nil, err
	}
	cost, _ := h.cost.MarshalJSON()
	b := []byte{'{'}
	b = append(b, col...)
	b = append(b, ':')
	b = append(b, grp...)
	b = append(b, `,"usage_date":`...)
	b = strconv.AppendInt(b, int64(h.date), 10)
	b = append(b, `,"cost":`...)
	b = append(b, cost...)
	return append(b, '}'), nil
}

type timeTotal struct {
	UsageDate int  `json:"usage_date"`
	Cost      dec2 `json:"cost"`
}

// forEachDay calls fn for every kept cell and every day of [from, to] inside
// the table, with the day's cost in the query's measure.
func (q *explorerQuery) forEachDay(t *costTable, from, to time.Time, fn func(c *costCell, day int, cents int64)) {
	a, b := max(t.dayIndex(from), 0), min(t.dayIndex(to), t.days-1)
	for i := range t.cells {
		c := &t.cells[i]
		if !q.keeps(t, c) {
			continue
		}
		for d := a; d <= b; d++ {
			fn(c, d, t.daily(c, q.costType, d))
		}
	}
}

// groupKey is a bucket of days (one day, or what a granularity groups) and
// a value of the group-by column.
type groupKey struct {
	bucket int
	group  string
}

// costsByGroup sums the query's daily costs over its dates by the bucket of
// each day (bucket) and the group-by value of each cell.
func (q *explorerQuery) costsByGroup(t *costTable, bucket func(day int) int) map[groupKey]int64 {
	sums := map[groupKey]int64{}
	q.forEachDay(t, q.start, q.end, func(cell *costCell, day int, cents int64) {
		sums[groupKey{bucket(day), t.value(cell, q.groupBy)}] += cents
	})
	return sums
}

func explorerHistory(c *call) response {
	q, bad := readExplorerQuery(c)
	if bad != nil {
		return *bad
	}
	t := c.org.costs
	byKey := q.costsByGroup(t, func(day int) int { return numericDate(bucketStart(t.dayAt(day), q.granularity)) })
	byBucket := map[int]int64{}
	for k, v := range byKey {
		byBucket[k.bucket] += v
	}
	rows := make([]historyRow, 0, len(byKey))
	col := columnName(q.groupBy)
	for k, v := range byKey {
		if v != 0 {
			rows = append(rows, historyRow{column: col, group: k.group, date: k.bucket, cost: dec2(v)})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.date != b.date {
			return a.date < b.date
		}
		if a.cost != b.cost {
			return a.cost > b.cost
		}
		return a.group < b.group
	})
	totalsRows := make([]timeTotal, 0, len(byBucket))
	for b, v := range byBucket {
		if v != 0 {
			totalsRows = append(totalsRows, timeTotal{b, dec2(v)})
		}
	}
	sort.Slice(totalsRows, func(i, j int) bool { return totalsRows[i].UsageDate < totalsRows[j].UsageDate })
	return c.ok(struct {
		CostRows         []historyRow `json:"costRows"`
		TotalsByTimeRows []timeTotal  `json:"totalsByTimeRows"`
		UsageRows        []struct{}   `json:"usageRows"`
		UsageGroupRows   []struct{}   `json:"usageGroupRows"`
		TimeColumn       string       `json:"timeColumn"`
		GroupBy          string       `json:"groupBy"`
		ServedFromCache  bool         `json:"servedFromCache"`
	}{rows, totalsRows, []struct{}{}, []struct{}{}, "usage_date", col, c.cached(ops.ExplorerHistory, q.canonical)})
}

type heatmapRow struct {
	Dimension string `json:"dimension"`
	Day       date   `json:"day"`
	Cost      dec2   `json:"cost"`
}

func explorerHeatmap(c *call) response {
	q, bad := readExplorerQuery(c)
	if bad != nil {
		return *bad
	}
	t := c.org.costs
	byKey := q.costsByGroup(t, func(day int) int { return day })
	keys := make([]groupKey, 0, len(byKey))
	for k, v := range byKey {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].bucket != keys[j].bucket {
			return keys[i].bucket < keys[j].bucket
		}
		return keys[i].group < keys[j].group
	})
	rows := make([]heatmapRow, len(keys))
	for i, k := range keys {
		rows[i] = heatmapRow{k.group, date(t.dayAt(k.bucket)), dec2(byKey[k])}
	}
	return c.ok(struct {
		Rows            []heatmapRow `json:"rows"`
		ServedFromCache bool         `json:"servedFromCache"`
	}{rows, c.cached(ops.ExplorerHeatmap, q.canonical)})
}

type dimensionItem struct {
	Value string `json:"value"`
	Cost  dec2   `json:"cost"`
}

// explorerDimensionValues answers the unblended cost of each value of a
// column over the 30 days ending AsOf.
func explorerDimensionValues(c *call) response {
	col, ok := columnIndex(c.params["key"])
	if !ok {
		return c.fail(http.StatusNotFound, "not_found", "Dimension not found")
	}
	t := c.org.costs
	to := c.s.asOf
	from := to.AddDate(0, 0, -29)
	sums := map[string]int64{}
	for i := range t.cells {
		cell := &t.cells[i]
		sums[t.value(cell, col)] += t.rangeSum(cell, costUnblended, from, to)
	}
	items := make([]dimensionItem, 0, len(sums))
	for v, s := range sums {
		items = append(items, dimensionItem{v, dec2(s)})
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].Cost != items[j].Cost {
			return items[i].Cost > items[j].Cost
		}
		return items[i].Value < items[j].Value
	})
	values := make([]string, len(items))
	for i, it := range items {
		values[i] = it.Value
	}
	return c.ok(struct {
		Items           []dimensionItem `json:"items"`
		Values          []string        `json:"values"`
		HasMore         bool            `json:"hasMore"`
		ServedFromCache bool            `json:"servedFromCache"`
	}{items, values, false, c.cached(ops.ExplorerDimensionValues, columnName(col))})
}
