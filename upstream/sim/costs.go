package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Dimension columns of the cost table, by index.
const (
	colService = iota // product_product_name
	colAccount        // billing_account_name
	numColumns
)

// Cost measures, by index. The blended cost is the unblended one: blending
// averages the rates of reservations and volume tiers shared across an
// organization's accounts, and the simulated organizations have none, so
// costBlended shares costUnblended's sums.
const (
	costUnblended = iota
	costNetUnblended
	costAmortized
	costBlended
	numCostTypes
)

// columnNames returns the Explorer names of the dimension columns, by index.
func columnNames() []string {
	return []string{colService: "product_product_name", colAccount: "billing_account_name"}
}

// costTypeNames returns the Explorer names of the cost measures, by index.
func costTypeNames() []string {
	return []string{
		costUnblended:    "line_item_unblended_cost",
		costNetUnblended: "line_item_net_unblended_cost",
		costAmortized:    "line_item_amortized_cost",
		costBlended:      "line_item_blended_cost",
	}
}

// columnName returns the Explorer name of a dimension column.
func columnName(col int) string {
	if col == colAccount {
		return columnNames()[colAccount]
	}
	return columnNames()[colService]
}

// columnIndex maps an Explorer column name to its index.
func columnIndex(name string) (int, bool) { return nameIndex(columnNames(), name) }

// costTypeIndex maps an Explorer cost measure name to its index.
func costTypeIndex(name string) (int, bool) { return nameIndex(costTypeNames(), name) }

// nameIndex returns the index of name in names, or 0 and false when it is
// not there.
func nameIndex(names []string, name string) (int, bool) {
	if i := slices.Index(names, name); i >= 0 {
		return i, true
	}
	return 0, false
}

// costTypeLabel names a cost measure for card descriptions.
func costTypeLabel(ct int) string {
	switch ct {
	case costNetUnblended:
		return "net unblended cost"
	case costAmortized:
		return "amortized cost"
	case costBlended:
		return "blended cost"
	}
	return "unblended cost"
}

// costTableStart is the first day of every cost table.
func costTableStart() time.Time { return time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC) }

// costTable is one organization's daily cost: service × account × day in
// integer cents, immutable after construction (so reads need no lock). Sums
// are exact because every derived measure is rounded per cell before any sum.
type costTable struct {
	start  time.Time
	days   int                  // number of days, start through AsOf
	values [numColumns][]string // names of each column's values, by index
	cells  []costCell           // only the (service, account) pairs in use
}

// costCell is one (service, account) pair with prefix sums per cost measure:
// pre[ct][i] is the cost of days [0, i), so any range sums in O(1).
type costCell struct {
	dims [numColumns]int
	pre  [numCostTypes][]int64
}

// dayIndex returns the index of day d (possibly outside [0, days)).
func (t *costTable) dayIndex(d time.Time) int {
	return int((d.Unix() - t.start.Unix()) / 86400)
}

// dayAt returns the date of index i.
func (t *costTable) dayAt(i int) time.Time { return t.start.AddDate(0, 0, i) }

// daily returns the cost of day index i, zero outside the table.
func (t *costTable) daily(c *costCell, ct, i int) int64 {
	if i < 0 || i >= t.days {
		return 0
	}
	return c.pre[ct][i+1] - c.pre[ct][i]
}

// rangeSum returns the cost of days [from, to] (dates, inclusive); days outside
// the table count as zero.
func (t *costTable) rangeSum(c *costCell, ct int, from, to time.Time) int64 {
	a, b := t.dayIndex(from), t.dayIndex(to)
	a = max(a, 0)
	b = min(b, t.days-1)
	if a > b {
		return 0
	}
	return c.pre[ct][b+1] - c.pre[ct][a]
}

// valueCost returns the unblended cost of one value of a column over [from, to].
func (t *costTable) valueCost(col int, value string, from, to time.Time) int64 {
	var sum int64
	for i := range t.cells {
		c := &t.cells[i]
		if t.values[col][c.dims[col]] == value {
			sum += t.rangeSum(c, costUnblended, from, to)
		}
	}
	return sum
}

// totalCost returns the unblended cost of everything over [from, to].
func (t *costTable) totalCost(from, to time.Time) int64 {
	var sum int64
	for i := range t.cells {
		sum += t.rangeSum(&t.cells[i], costUnblended, from, to)
	}
	return sum
}

// value returns the name of a cell's value in a column.
func (t *costTable) value(c *costCell, col int) string { return t.values[col][c.dims[col]] }

// buildCostTable generates the table. Each used pair gets a base daily cost
// from the service's and account's shares of the organization's spend; days
// add slow growth, a weekly rhythm (compute-like services drop at weekends)
// and noise.
func buildCostTable(r *rand.Rand, spec *orgSpec, asOf time.Time) *costTable {
	t := &costTable{start: costTableStart()}
	t.days = max(int((asOf.Unix()-t.start.Unix())/86400)+1, 0)
	for _, s := range spec.services {
		t.values[colService] = append(t.values[colService], s.name)
	}
	for _, a := range spec.accounts {
		t.values[colAccount] = append(t.values[colAccount], a.name)
	}
	used := usedPairs(r, len(spec.services), len(spec.accounts))
	for si, s := range spec.services {
		for ai, a := range spec.accounts {
			if !used[si][ai] {
				continue
			}
			base := spec.dailySpend * s.share * a.share * (0.6 + 0.8*r.Float64()) // dollars
			c := costCell{dims: [numColumns]int{si, ai}}
			for ct := range costBlended {
				c.pre[ct] = make([]int64, t.days+1)
			}
			c.pre[costBlended] = c.pre[costUnblended]
			for d := range t.days {
				day := t.dayAt(d)
				v := base * math.Pow(1+spec.monthlyGrowth, float64(d)/30.4)
				if wd := day.Weekday(); wd == time.Saturday || wd == time.Sunday {
					v *= s.weekend
				}
				v *= 0.92 + 0.16*r.Float64()
				cents := int64(math.Round(v * 100))
				c.pre[costUnblended][d+1] = c.pre[costUnblended][d] + cents
				c.pre[costNetUnblended][d+1] = c.pre[costNetUnblended][d] + roundDiv(cents*94, 100)
				c.pre[costAmortized][d+1] = c.pre[costAmortized][d] + roundDiv(cents*97, 100)
			}
			t.cells = append(t.cells, c)
		}
	}
	return t
}

// usedPairs decides which account uses which service: the first account (the
// main production account) uses everything, every other account uses about
// three quarters of the services, and every service is used somewhere.
func usedPairs(r *rand.Rand, services, accounts int) [][]bool {
	used := make([][]bool, services)
	for s := range used {
		used[s] = make([]bool, accounts)
		for a := range accounts {
			used[s][a] = a == 0 || r.Float64() < 0.75
		}
	}
	return used
}
