package testlog

import (
	"strings"
	"testing"
	"time"
)

// Wait sees what is written after it began waiting, and what was before.
func TestWaitSeesLaterWrites(t *testing.T) {
	var b Buffer
	b.Write([]byte("one\n"))
	go func() {
		for _, line := range []string{"two\n", "three\n"} {
			b.Write([]byte(line))
		}
	}()
	got := b.Wait(t, 10*time.Second, "third line", func(log string) bool { return strings.Contains(log, "three") })
	if got != "one\ntwo\nthree\n" {
		t.Errorf("Wait returned %q", got)
	}
	if got := b.Wait(t, time.Second, "first line", func(log string) bool { return strings.HasPrefix(log, "one") }); got == "" {
		t.Error("Wait of what was written already returned nothing")
	}
}
