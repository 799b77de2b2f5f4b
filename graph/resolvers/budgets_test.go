package resolvers

import (
	"testing"

	"github.com/costgw/gateway/upstream"
)

// The total of a budget's actuals is the sum of the amounts as the decimals
// they are: without the float noise of the sum, and with every digit an
// amount has. Before, it was rounded to the cent, which dropped what a
// sub-cent amount or a currency of three decimals adds.
func TestActualsTotalIsTheDecimalSum(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		amounts []float64
		want    float64
	}{
		{"cents", []float64{10.25, 0.1, 0.2}, 10.55},
		{"float noise", []float64{0.1, 0.2}, 0.3},
		{"sub-cent amounts", []float64{0.004, 0.004, 1234.5678}, 1234.5758},
		{"three decimals", []float64{1.005, 2.001}, 3.006},
		{"whole", []float64{3, 4}, 7},
		{"negative", []float64{-0.015, 0.01}, -0.005},
		{"none", nil, 0},
		{"beyond a float64's digits", []float64{1e15, 0.5, 0.25}, 1e15 + 0.75},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &upstream.BudgetActuals{AccountActualsByPeriod: map[string]float64{}}
			for i, v := range tc.amounts {
				a.AccountActualsByPeriod[string(rune('a'+i))] = v
			}
			got, err := actualsModel(a, false)
			if err != nil {
				t.Fatal(err)
			}
			if got.Total != tc.want {
				t.Errorf("total of %v = %v, want %v", tc.amounts, got.Total, tc.want)
			}
		})
	}
}
