// Package nodes is what the e2e drivers that run a room on several
// processes share: free loopback ports, child processes in their own
// process group with a log file, DynamoDB Local as the shared state store,
// and a crowd's share of each node.
package nodes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreeAddr is a free loopback address, host:port.
func FreeAddr() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

// WaitHTTP polls url until anything answers or within passes.
func WaitHTTP(ctx context.Context, url string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never answered within %s: %w", url, within, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Proc is a child process with its output in a log file.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs bin with args in dir, its environment the driver's plus env,
// its output appended to logPath.
func Start(name, dir, logPath string, env []string, bin string, args ...string) (*Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	// Own process group, so a stop reaches Java's children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

// Pause stops the process group (SIGSTOP) for d, then continues it
// (SIGCONT), as a machine starving the process of CPU would: its
// requests wait, and its timers fire late. It continues the process
// early if ctx ends.
func (p *Proc) Pause(ctx context.Context, d time.Duration) error {
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stopping %s: %w", p.Name, err)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("continuing %s: %w", p.Name, err)
	}
	return nil
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Stop sends sig to the process group and waits for the exit, escalating
// to SIGKILL after within. A nil Proc is stopped.
func (p *Proc) Stop(sig syscall.Signal, within time.Duration) error {
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(within):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %s on %v; killed", p.Name, within, sig)
	}
}

// Tail is the last lines of a log, for an error message.
func Tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
