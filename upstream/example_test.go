package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
)

// The client holds no key: each call takes the caller's key from its context.
func Example() {
	srv := httptest.NewServer(sim.New(sim.Options{}))
	defer srv.Close()

	client, err := upstream.NewClient(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	ctx := upstream.WithAPIKey(context.Background(), sim.DemoKey)

	page, err := client.Budgets.List(ctx, &upstream.ListOptions{Limit: 3})
	if err != nil {
		log.Fatal(err)
	}
	for _, b := range page.Data {
		fmt.Printf("%s: %s from %s, %d periods\n", b.Name, b.Period, b.StartDate, b.NumberOfPeriods)
	}
	fmt.Println("more pages:", page.Pagination.HasMore)
	// Output:
	// Payments Network Budget 2025: MONTHLY from 2025-08-01, 12 periods
	// Payments Cloud Budget 2025: MONTHLY from 2025-08-01, 12 periods
	// Payments Compute Budget 2025: MONTHLY from 2025-11-01, 12 periods
	// more pages: true
}

func ExampleBudgetsService_Get() {
	srv := httptest.NewServer(sim.New(sim.Options{}))
	defer srv.Close()
	client, err := upstream.NewClient(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	ctx := upstream.WithAPIKey(context.Background(), sim.DemoKey)

	first, err := client.Budgets.List(ctx, &upstream.ListOptions{Limit: 1})
	if err != nil {
		log.Fatal(err)
	}
	d, err := client.Budgets.Get(ctx, first.Data[0].ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (%s), report %q, %d planning rows\n", d.Budget.Name, d.Budget.Status, d.Budget.ExplorerReport.Name, len(d.Budget.Plannings))
	m := d.Metrics
	fmt.Println("variance is target minus actual:", fmt.Sprintf("%.2f", m.Variance) == fmt.Sprintf("%.2f", m.TotalTarget-m.TotalActual))

	// Another organization's budget answers 404, exactly like an unknown id.
	_, err = client.Budgets.Get(upstream.WithAPIKey(context.Background(), sim.OtherOrgKey), first.Data[0].ID)
	fmt.Println("other organization:", errors.Is(err, upstream.ErrNotFound))
	// Output:
	// Payments Network Budget 2025 (ACTIVE), report "Network & Delivery", 4 planning rows
	// variance is target minus actual: true
	// other organization: true
}

func ExampleBudgetsService_All() {
	srv := httptest.NewServer(sim.New(sim.Options{}))
	defer srv.Close()
	client, err := upstream.NewClient(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	ctx := upstream.WithAPIKey(context.Background(), sim.DemoKey)

	n, periods := 0, 0
	for b, err := range client.Budgets.All(ctx, 10) {
		if err != nil {
			log.Fatal(err)
		}
		n++
		periods += b.NumberOfPeriods
	}
	fmt.Println(n, "budgets,", periods, "periods in all")
	// Output:
	// 24 budgets, 235 periods in all
}
