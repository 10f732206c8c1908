package env

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// The ports sharded-test-server binds; they are not configurable.
var twoShardPorts = []int{6443, 6444, 6445, 2379, 2380, 2381, 2382, 8010, 8011, 8012}

// TwoShardLockFile serializes users of the two-shard topology on a machine.
var TwoShardLockFile = filepath.Join(os.TempDir(), "depctrl-two-shards.lock")

// StartTwoShards starts kcp's sharded-test-server with a root shard and a
// second shard, a cache server and a front-proxy. It waits (up to
// opts.ReadyTimeout) for any other two-shard environment on the machine to
// stop first.
func StartTwoShards(ctx context.Context, opts Options) (_ *Env, retErr error) {
	server, err := binary("sharded-test-server", "kcp")
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"kcp", "kcp-front-proxy", "cache-server"} {
		if _, err := binary(b, "kcp"); err != nil {
			return nil, err
		}
	}
	removeDir, err := opts.prepare("depctrl-kcp2-")
	if err != nil {
		return nil, err
	}
	defer undoOnError(&retErr, removeDir)
	unlock, err := lockFile(ctx, TwoShardLockFile, opts.ReadyTimeout)
	if err != nil {
		return nil, err
	}
	defer undoOnError(&retErr, unlock)
	if busy := busyPorts(twoShardPorts); len(busy) > 0 {
		return nil, fmt.Errorf("ports %v are in use: the two-shard topology needs them (is a two-shard environment running outside this lock?)", busy)
	}

	binDir, _ := BinDir()
	logDir := filepath.Join(opts.Dir, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, err
	}
	e := &Env{Dir: opts.Dir, Topology: TwoShards, FrontProxyURL: "https://127.0.0.1:6443"}
	driverLog := filepath.Join(logDir, "sharded-test-server.log")
	e.LogFiles = []string{driverLog,
		filepath.Join(logDir, "kcp-0.log"), filepath.Join(logDir, "kcp-1.log"),
		filepath.Join(logDir, "kcp-front-proxy.log"), filepath.Join(logDir, "cache-server.log")}
	p, err := StartProcess("sharded-test-server", server,
		[]string{"--number-of-shards=2", "--quiet", "--work-dir-path=" + opts.Dir, "--log-dir-path=" + logDir},
		opts.Dir, driverLog,
		"NO_GORUN=1", "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err != nil {
		return nil, err
	}
	e.stop = func() error {
		err := p.Stop(30 * time.Second)
		unlock()
		removeDir()
		return err
	}
	defer e.stopOnError(&retErr)

	kcpDir := filepath.Join(opts.Dir, ".kcp")
	readyFile := filepath.Join(kcpDir, "ready-to-test")
	if err := waitFor(ctx, opts.ReadyTimeout, p, func() bool { return fileExists(readyFile) }); err != nil {
		return nil, fmt.Errorf("waiting for sharded-test-server to become ready: %w", err)
	}
	e.CAFile = filepath.Join(kcpDir, "serving-ca.crt")
	e.ClientCACert = filepath.Join(kcpDir, "client-ca.crt")
	e.ClientCAKey = filepath.Join(kcpDir, "client-ca.key")
	cfg, err := clientcmd.LoadFromFile(filepath.Join(kcpDir, "admin.kubeconfig"))
	if err != nil {
		return nil, fmt.Errorf("reading the front-proxy admin kubeconfig: %w", err)
	}
	cfg.CurrentContext = "root"
	e.AdminKubeconfig = filepath.Join(opts.Dir, "admin.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, e.AdminKubeconfig); err != nil {
		return nil, err
	}
	e.Shards = []Shard{
		{Name: "root", URL: "https://127.0.0.1:6444"},
		{Name: "shard-1", URL: "https://127.0.0.1:6445"},
	}
	if err := e.serve(ctx, opts.ReadyTimeout, p); err != nil {
		return nil, err
	}
	return e, nil
}

// lockFile takes an exclusive flock on path, waiting up to timeout. The lock
// is released when the returned function runs or this process exits.
func lockFile(ctx context.Context, path string, timeout time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			return nil, fmt.Errorf("another two-shard environment holds %s after %s; stop it (or attach to it with %s)", path, timeout, AttachVariable)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

func busyPorts(ports []int) []int {
	var busy []int
	for _, p := range ports {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			busy = append(busy, p)
		}
	}
	return busy
}

// ListeningPorts reports which of the environment's ports still accept
// connections; after Stop it must be empty.
func (e *Env) ListeningPorts() []int {
	var ports []int
	if e.Topology == TwoShards {
		ports = append(ports, twoShardPorts...)
	}
	for _, u := range append([]string{e.FrontProxyURL}, shardURLs(e.Shards)...) {
		_, port, err := net.SplitHostPort(strings.TrimPrefix(u, "https://"))
		if err == nil {
			var n int
			if _, err := fmt.Sscan(port, &n); err == nil {
				ports = append(ports, n)
			}
		}
	}
	return busyPorts(ports)
}

func shardURLs(shards []Shard) []string {
	var urls []string
	for _, s := range shards {
		urls = append(urls, s.URL)
	}
	return urls
}
