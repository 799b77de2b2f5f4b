// Package profilehook lets the benchmark harness profile the gateway's own
// binary, which serves no pprof endpoint. `make profile` (bench/profile.go)
// builds the gateway with `go build -overlay`, which adds one file to the
// gateway's main package calling Install from an init function. The source
// tree is not changed, and no other build imports this package.
//
// The harness starts that binary with Env set to a directory and signals it:
// SIGUSR1 when its measured window opens, SIGUSR2 when it closes. So the
// profiles cover the load the harness measured, not start-up or warm-up.
package profilehook

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
)

// Env names the directory the profiles go to. Unset, Install does nothing.
const Env = "COSTGW_BENCH_PROFILE_DIR"

// The files Install writes in the directory.
const (
	// CPUFile is the CPU profile of the window.
	CPUFile = "cpu.pprof"
	// AllocsBaseFile is the allocation profile as the window opens, and
	// AllocsFile as it closes: `go tool pprof -base` of the two is the
	// window's allocations.
	AllocsBaseFile = "allocs-base.pprof"
	AllocsFile     = "allocs.pprof"
	// DoneFile is created when every profile is written; ErrorFile holds
	// what went wrong instead.
	DoneFile  = "done"
	ErrorFile = "error.txt"
)

// Install starts the profiling on signals when Env is set: SIGUSR1 writes
// AllocsBaseFile and starts the CPU profile, SIGUSR2 stops it and writes
// AllocsFile, then DoneFile.
func Install() {
	dir := os.Getenv(Env)
	if dir == "" {
		return
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		var cpu *os.File
		for s := range sig {
			var err error
			switch {
			case s == syscall.SIGUSR1 && cpu == nil:
				if err = writeAllocs(filepath.Join(dir, AllocsBaseFile)); err == nil {
					cpu, err = startCPU(filepath.Join(dir, CPUFile))
				}
			case s == syscall.SIGUSR2 && cpu != nil:
				pprof.StopCPUProfile()
				err = cpu.Close()
				cpu = nil
				if err == nil {
					err = writeAllocs(filepath.Join(dir, AllocsFile))
				}
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, DoneFile), nil, 0o644)
				}
			}
			if err != nil {
				_ = os.WriteFile(filepath.Join(dir, ErrorFile), []byte(err.Error()+"\n"), 0o644)
			}
		}
	}()
}

func startCPU(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start the CPU profile: %w", err)
	}
	return f, nil
}

// writeAllocs writes the allocation profile. The runtime publishes it as of
// the last finished garbage collection, so one is run first.
func writeAllocs(path string) error {
	runtime.GC()
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
