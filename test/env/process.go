package env

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Process is a child started in its own process group, so that stopping it
// also stops everything it started (sharded-test-server's shards and cache
// server, for instance).
type Process struct {
	name   string
	cmd    *exec.Cmd
	reaper *exec.Cmd
	done   chan struct{}
	err    error
}

// StartProcess runs bin with args, appending its output to logFile. A
// detached reaper kills the process group if this process dies without
// stopping it, which covers test timeouts and panics.
func StartProcess(name, bin string, args []string, dir, logFile string, extraEnv ...string) (*Process, error) {
	return StartProcessWithEnv(name, bin, args, dir, logFile, append(os.Environ(), extraEnv...))
}

// StartProcessWithEnv is StartProcess with exactly the environment environ,
// nothing inherited: what a container gets.
func StartProcessWithEnv(name, bin string, args []string, dir, logFile string, environ []string) (*Process, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening log for %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.Env = environ
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &Process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	p.reaper = startReaper(os.Getpid(), cmd.Process.Pid)
	return p, nil
}

// startReaper starts a shell in a session of its own that waits for owner to
// exit and then terminates process group pgid. Being outside both the owner's
// and the group's sessions, it survives whatever kills the owner.
func startReaper(owner, pgid int) *exec.Cmd {
	script := `while kill -0 ` + strconv.Itoa(owner) + ` 2>/dev/null; do sleep 1; done
kill -TERM -` + strconv.Itoa(pgid) + ` 2>/dev/null; sleep 10; kill -KILL -` + strconv.Itoa(pgid) + ` 2>/dev/null`
	r := exec.Command("/bin/sh", "-c", script)
	r.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := r.Start(); err != nil {
		return nil
	}
	go func() { _ = r.Wait() }()
	return r
}

// Pid is the process ID of the process (the leader of its group).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the whole group, then SIGKILL after grace. It returns
// only once the group leader has exited and the group is empty.
func (p *Process) Stop(grace time.Duration) error {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	// A paused group (Pause) handles the SIGTERM once continued.
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Children may outlive the leader (sharded-test-server's cache server
	// ignores its parent's exit): make sure the group is gone.
	deadline := time.Now().Add(grace)
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			return fmt.Errorf("process group of %s (%d) did not exit", p.name, pgid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if p.reaper != nil && p.reaper.Process != nil {
		_ = p.reaper.Process.Kill()
	}
	return nil
}

func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Pause stops the process group with SIGSTOP: its sockets stay open and
// the kernel keeps queueing what arrives, but nothing is read or answered,
// as with a process that hangs. Resume continues it.
func (p *Process) Pause() error {
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stopping %s: %w", p.name, err)
	}
	return nil
}

// Resume continues a paused process group with SIGCONT.
func (p *Process) Resume() error {
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("continuing %s: %w", p.name, err)
	}
	return nil
}
