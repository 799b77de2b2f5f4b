// Package testlog is a log sink for tests: a buffer that the code under test
// writes from its goroutines while the test reads it.
package testlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is safe for concurrent writes and reads.
type Buffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed by the next Write; nil until asked for
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Changed returns what was written so far, and a channel that is closed
// when more is.
func (b *Buffer) Changed() (string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.buf.String(), b.changed
}

// Wait returns what was written once cond holds of it, looking again after
// each write; it fails the test, with what was written, if cond does not
// hold within timeout.
func (b *Buffer) Wait(t testing.TB, timeout time.Duration, what string, cond func(log string) bool) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		log, changed := b.Changed()
		if cond(log) {
			return log
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %s in %v:\n%s", what, timeout, b.String())
		}
	}
}

// JSONLines decodes the JSON log lines written so far, failing the test on
// a line that is not JSON.
func (b *Buffer) JSONLines(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}
