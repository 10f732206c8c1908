package env

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// PauseShard stops the process serving the named shard with SIGSTOP: it
// keeps accepting connections (the kernel does) and answers nothing, as a
// hung or partitioned shard would. The returned function resumes it; call
// it before the test ends, or the environment stays wedged.
func (e *Env) PauseShard(name string) (resume func() error, err error) {
	s, err := e.Shard(name)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, fmt.Errorf("shard %s: %w", name, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("shard %s: URL %s has no port", name, s.URL)
	}
	pid, err := listeningPid(port)
	if err != nil {
		return nil, fmt.Errorf("shard %s: %w", name, err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("stopping shard %s (pid %d): %w", name, pid, err)
	}
	return func() error { return syscall.Kill(pid, syscall.SIGCONT) }, nil
}

// listeningPid finds the process with a socket listening on port.
func listeningPid(port int) (int, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := listeningInodes(f, port, inodes); err != nil {
			return 0, err
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("nothing listens on port %d", port)
	}
	procs, err := filepath.Glob("/proc/[0-9]*/fd/*")
	if err != nil {
		return 0, err
	}
	for _, fd := range procs {
		target, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(target, "socket:[") {
			continue
		}
		if inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] {
			return strconv.Atoi(strings.Split(fd, "/")[2])
		}
	}
	return 0, fmt.Errorf("no process of ours holds the socket listening on port %d", port)
}

// listeningInodes adds the inodes of the sockets in LISTEN state on port,
// as the kernel lists them in file (/proc/net/tcp format).
func listeningInodes(file string, port int, into map[string]bool) error {
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// local_address rem_address st ... inode (field 9)
		if len(fields) > 9 && strings.HasSuffix(fields[1], want) && fields[3] == "0A" {
			into[fields[9]] = true
		}
	}
	return sc.Err()
}
