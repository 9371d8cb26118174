// Package crashtest runs a test's child in another process of the test
// binary, to be killed with SIGKILL mid-work: the crash tests of both bolt
// stores (room state, seats) use it.
package crashtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
)

// Child is a running child and the lines it prints, one a line, closed
// when it exits.
type Child struct {
	cmd   *exec.Cmd
	Lines <-chan string
}

// Start runs the test named test of this binary (`^test$`) in a child
// process whose environment has env set to value: the child's cue that it
// is the child, and what it works on.
func Start(t testing.TB, test, env, value string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+value)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return &Child{cmd: cmd, Lines: lines}
}

// Kill kills the child with SIGKILL, waits for it, and drains what it
// printed before it died.
func (c *Child) Kill(t testing.TB) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range c.Lines {
	}
	_ = c.cmd.Wait()
}

// Work is the child's load: n goroutines, each calling work with its
// number w and a count i from 0 until work returns false (a child is
// usually killed long before). It returns when they all have.
func Work(n int, work func(w, i int) bool) {
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			for i := 0; work(w, i); i++ {
			}
		})
	}
	wg.Wait()
}

var printing sync.Mutex

// Printf prints one line for the parent to read (Child.Lines), whole
// whichever goroutine prints it.
func Printf(format string, args ...any) {
	printing.Lock()
	defer printing.Unlock()
	fmt.Printf(format+"\n", args...)
}
