package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process the bench started, in a process group of its own
// so that it and any workers it forks are stopped together.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProc starts a program with its output going to out (nil discards it).
func startProc(name, dir string, env []string, out io.Writer, prog string, args ...string) (*proc, error) {
	cmd := exec.Command(prog, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// pid is the process id of the program itself.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process group to end (SIGTERM), and kills it after a grace
// period. Only the group this bench created is signalled.
func (p *proc) stop() {
	if p == nil || p.exited() {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
}

// kill ends the process group at once (SIGKILL) and waits for it: for a
// gateway that may be busy for seconds more with requests whose clients
// have gone, which a graceful stop would wait for.
func (p *proc) kill() {
	if p == nil || p.exited() {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	<-p.done
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitHTTP polls url until it answers with want (0: any status), the process
// ends, or the timeout passes.
func waitHTTP(ctx context.Context, p *proc, url string, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: time.Second}
	for {
		resp, err := hc.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if want == 0 || resp.StatusCode == want {
				return nil
			}
		}
		if p.exited() {
			return fmt.Errorf("%s exited before it was ready: %v", p.name, p.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready at %s after %v (last error: %v)", p.name, url, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat: 100
// on every Linux architecture Go supports.
const clockTicks = 100

// procStat is what the bench reads of a process from /proc.
type procStat struct {
	ppid int
	cpu  time.Duration // user + system
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	ppid, _ := strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return procStat{ppid: ppid, cpu: time.Duration(ut+st) * time.Second / clockTicks}, nil
}

// tree returns pid and its live descendants.
func tree(pid int) []int {
	children := map[int][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		n, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if st, err := readStat(n); err == nil {
			children[st.ppid] = append(children[st.ppid], n)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// cpuOf is the CPU time used so far by the processes.
func cpuOf(pids []int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		if st, err := readStat(pid); err == nil {
			total += st.cpu
		}
	}
	return total
}

// statusKB reads a "Name:   123 kB" line of /proc/<pid>/status, in bytes.
func statusKB(pid int, name string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	return 0
}

// resetPeakRSS sets VmHWM back to the current RSS (Linux clear_refs 5), so
// the peak of the next run can be read on its own.
func resetPeakRSS(pids []int) error {
	var errs []error
	for _, pid := range pids {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// peakRSS is the sum of the processes' VmHWM: exact for one process, an
// upper bound for several.
func peakRSS(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		total += statusKB(pid, "VmHWM")
	}
	return total
}
