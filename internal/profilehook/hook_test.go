package profilehook

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// SIGUSR1 and SIGUSR2 bracket the profiles: every file is written, and
// done comes last.
func TestSignalsWriteTheProfiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(Env, dir)
	Install()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	// Wait for the CPU profile to start before stopping it.
	waitFor(t, filepath.Join(dir, CPUFile))
	for i := 0; i < 1e6; i++ {
		_ = make([]byte, 64)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, filepath.Join(dir, DoneFile))
	for _, f := range []string{CPUFile, AllocsBaseFile, AllocsFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v, %v", f, st, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, ErrorFile)); err == nil {
		t.Errorf("error: %s", b)
	}
}

// waitFor waits for the hook to write path. A poll: the hook works on its
// own goroutine, woken by a signal, and says nothing but its files.
func waitFor(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s was not written", path)
}
