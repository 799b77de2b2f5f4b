package main

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pageFake answers every query at once, after a millisecond, and records
// which queries each worker sent, in order.
type pageFake struct {
	mu   sync.Mutex
	sent []string
}

func (f *pageFake) name() string         { return "fake" }
func (f *pageFake) supports(*query) bool { return true }
func (f *pageFake) pids() []int          { return []int{os.Getpid()} }
func (f *pageFake) close()               {}

func (f *pageFake) do(_ context.Context, q *query, buf *bytes.Buffer) error {
	time.Sleep(time.Millisecond)
	f.mu.Lock()
	f.sent = append(f.sent, q.Name)
	f.mu.Unlock()
	buf.Reset()
	return nil
}

// With pages, each client loads them in turn, starting at its own, so
// that the pages are loaded alike: in any window, each page within one
// answer a client of the other. The answers counted are given to answered.
func TestRunLoadPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pages := []*query{queryByName("Overview"), queryByName("Dashboard")}
		const clients = 3
		var got []string
		res, lat := runLoad(context.Background(), &pageFake{}, loadSpec{pages: pages, concurrency: clients,
			warmup: 10 * time.Millisecond, duration: 100 * time.Millisecond,
			answered: func(q *query, d time.Duration) {
				got = append(got, q.Name)
				if d != time.Millisecond {
					t.Errorf("%s answered in %v, want 1ms", q.Name, d)
				}
			}})
		if res.Query != "Overview+Dashboard" {
			t.Errorf("the run's name %q", res.Query)
		}
		if res.Requests == 0 || len(got) != res.Requests || len(lat) != res.Requests {
			t.Fatalf("%d requests, %d answered, %d latencies", res.Requests, len(got), len(lat))
		}
		n := map[string]int{}
		for _, name := range got {
			n[name]++
		}
		if d := n["Overview"] - n["Dashboard"]; d > clients || d < -clients || len(n) != 2 {
			t.Errorf("page loads %v: more apart than one a client", n)
		}
	})
}
