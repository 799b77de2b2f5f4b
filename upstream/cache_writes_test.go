package upstream

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/costgw/gateway/internal/sharedstate"
	"github.com/costgw/gateway/internal/testredis"
	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

// TestCacheFlightAfterWrite: a read that starts after a mutation answered
// does not join a call of the same entry sent before the write (the flight
// is named by the tags' versions too). It failed before: the read got the
// old name.
func TestCacheFlightAfterWrite(t *testing.T) {
	s := sim.New(sim.Options{})
	var hold atomic.Bool
	recorded := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/budgets/") && hold.Load() {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, r)
			once.Do(func() { close(recorded) })
			<-release
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return
		}
		s.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ca, _ := NewCache(CacheConfig{MaxBytes: 64 << 20, KeyRecheck: time.Hour, TTL: DefaultCacheTTL})
	c, _ := NewClient(srv.URL, WithCache(ca), WithRetry(RetryPolicy{MaxAttempts: 1}))
	ctx := keyed(sim.DemoKey)
	p, err := c.Budgets.List(ctx, &ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	id := p.Data[0].ID
	// name reads the budget's name in a goroutine of its own.
	name := func() <-chan string {
		got := make(chan string, 1)
		go func() {
			b, err := c.Budgets.Get(ctx, id)
			if err != nil {
				t.Error(err)
				got <- ""
				return
			}
			got <- b.Budget.Name
		}()
		return got
	}
	hold.Store(true)
	done := name()
	<-recorded
	hold.Store(false)
	renamed := "renamed after the flight was sent"
	if _, err := c.Budgets.Update(ctx, id, &BudgetUpdate{Name: &renamed}, nil); err != nil {
		t.Fatal(err)
	}
	// The mutation answered. Now a new read with the same key:
	after := name()
	time.Sleep(100 * time.Millisecond) // time for the read to join the held call, if it would
	close(release)
	<-done
	if got := <-after; got != renamed {
		t.Errorf("read started after the update answered got %q, want %q (joined a flight sent before the write)", got, renamed)
	}
}

// TestCacheTagExpiresAndIsBumpedAgain: a tag's Redis key expires a while
// after its last bump, and an entry recorded after that bump may outlive
// it. The next bump must not give the tag a version that entry recorded
// (a per-tag INCR restarted at 1 and did). The sleeps are Redis's own
// expiry, on a real redis-server.
func TestCacheTagExpiresAndIsBumpedAgain(t *testing.T) {
	rds := testredis.Start(t)
	rdb := rds.Client(t)
	shared := sharedstate.NewCache(rdb, slog.Default())
	ttl := map[string]time.Duration{ops.GetBudget: 2 * time.Second, ops.ListBudgets: time.Second}
	s := sim.New(sim.Options{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	ca, _ := NewCache(CacheConfig{MaxBytes: 64 << 20, KeyRecheck: time.Hour, TTL: ttl, Shared: shared})
	c, _ := NewClient(srv.URL, WithCache(ca), WithRetry(RetryPolicy{MaxAttempts: 1}))
	w := keyed(sim.DemoKey)
	reader := keyed(sim.ReadOnlyKey)
	p, err := c.Budgets.List(w, &ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	id := p.Data[0].ID
	if _, err := c.Budgets.List(reader, &ListOptions{Limit: 1}); err != nil { // accept reader
		t.Fatal(err)
	}
	n1 := "first rename"
	if _, err := c.Budgets.Update(w, id, &BudgetUpdate{Name: &n1}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	b, err := c.Budgets.Get(reader, id) // entry recorded with b:id at version 1
	if err != nil || b.Budget.Name != n1 {
		t.Fatalf("%v %v", b, err)
	}
	time.Sleep(1000 * time.Millisecond)
	if n, _ := rdb.Exists(context.Background(), "costgw:tag:b:"+id).Result(); n != 0 {
		t.Fatalf("the tag's key did not expire")
	}
	n2 := "second rename"
	if _, err := c.Budgets.Update(w, id, &BudgetUpdate{Name: &n2}, nil); err != nil {
		t.Fatal(err)
	}
	b, err = c.Budgets.Get(reader, id)
	if err != nil || b.Budget.Name != n2 {
		t.Errorf("read after the second update: %q, %v; want %q", b.Budget.Name, err, n2)
	}
}

type mark struct{}

// flakyStore refuses bumps from contexts carrying mark; the retry's bump
// (context.Background) blocks until released, then lands.
type flakyStore struct {
	rawStore
	mu       sync.Mutex
	landed   []string
	inRetry  chan struct{}
	release  chan struct{}
	retrying bool
}

func (s *flakyStore) Bump(ctx context.Context, tags []string, _ time.Duration) error {
	if ctx.Value(mark{}) != nil {
		return errors.New("refused")
	}
	s.mu.Lock()
	first := !s.retrying
	s.retrying = true
	s.mu.Unlock()
	if first {
		// the INCRs land now, before the second write applied
		s.mu.Lock()
		s.landed = append(s.landed, tags...)
		s.mu.Unlock()
		close(s.inRetry)
		<-s.release
		return nil
	}
	s.mu.Lock()
	s.landed = append(s.landed, tags...)
	s.mu.Unlock()
	return nil
}

// TestCacheRetryKeepsLaterWrites: a write whose bump fails while the retry
// of an earlier one is on its way is sent again too (the retry once cleared
// its tags with the earlier ones').
func TestCacheRetryKeepsLaterWrites(t *testing.T) {
	st := &flakyStore{inRetry: make(chan struct{}), release: make(chan struct{})}
	ca, _ := NewCache(CacheConfig{MaxBytes: 1 << 20, KeyRecheck: time.Hour, Shared: st})
	ctx := context.WithValue(keyed("k"), mark{}, true)
	ca.written(ctx, "b1", "o1") // the first write: its bump refused, a retry scheduled
	<-st.inRetry                // the retry's bump has landed, and not answered yet
	ca.written(ctx, "b1", "o1") // a second write after it: its bump refused too
	close(st.release)           // the retry's bump answers
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		st.mu.Lock()
		landed := len(st.landed)
		st.mu.Unlock()
		if landed == 6 {
			return
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	t.Errorf("bumps landed: %q; want the second write's three tags too", st.landed)
}
