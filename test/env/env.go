package env

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// AttachVariable names an env.json (or the directory holding it) of an
// environment that is already running.
const AttachVariable = "DEPCTRL_TEST_ENV"

// Topology is the shape of a kcp installation.
type Topology string

const (
	// SingleShard is one kcp process; it is its own front door.
	SingleShard Topology = "single-shard"
	// TwoShards is a root shard, a second shard, a cache server and a front-proxy.
	TwoShards Topology = "two-shards"
)

// Shard is one kcp shard, reached directly rather than through the front-proxy.
type Shard struct {
	// Name is the name of the Shard object in the root workspace.
	Name string `json:"name"`
	// URL is the shard's own base URL, without a /clusters suffix.
	URL string `json:"url"`
	// AdminKubeconfig holds system:masters credentials for this shard alone;
	// its current context points at the shard's system:admin logical cluster.
	AdminKubeconfig string `json:"adminKubeconfig"`
}

// Env describes a running kcp installation.
type Env struct {
	// Dir holds every file of the environment (data, certificates, logs).
	Dir      string   `json:"dir"`
	Topology Topology `json:"topology"`
	// FrontProxyURL is the base URL clients use, without a /clusters suffix.
	// On a single shard it is the shard itself.
	FrontProxyURL string `json:"frontProxyURL"`
	// CAFile verifies the serving certificates of the front-proxy and shards.
	CAFile string `json:"caFile"`
	// AdminKubeconfig is a kcp-admin kubeconfig through the front-proxy whose
	// current context points at the root workspace.
	AdminKubeconfig string `json:"adminKubeconfig"`
	// ClientCACert and ClientCAKey sign client certificates that every shard
	// and the front-proxy accept; Identity uses them.
	ClientCACert string  `json:"clientCACert"`
	ClientCAKey  string  `json:"clientCAKey"`
	Shards       []Shard `json:"shards"`
	// LogFiles lists the log files of the processes, for failure reports.
	LogFiles []string `json:"logFiles"`
	// Kube is a Kubernetes API server started with the environment
	// (depctrl-testenv -kube), for deploying the runtime.
	Kube *Kube `json:"kube,omitempty"`

	mu       sync.Mutex
	stop     func() error
	restart  func(context.Context) error
	attached bool
}

// Restart stops kcp and starts it again on the same data and ports, as an
// operator restarting it would, and waits until it is ready. Only an
// environment this process started with a single shard can do that.
func (e *Env) Restart(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.attached || e.restart == nil {
		return fmt.Errorf("cannot restart this %s environment: only a single-shard environment started by this process can be restarted", e.Topology)
	}
	return e.restart(ctx)
}

// DescriptorPath is where an environment's env.json lives.
func (e *Env) DescriptorPath() string { return filepath.Join(e.Dir, "env.json") }

// Attached reports whether this value describes an environment that some
// other process started (and will stop).
func (e *Env) Attached() bool { return e.attached }

// WriteDescriptor (re)writes env.json, for example after adding Kube.
func (e *Env) WriteDescriptor() error {
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding environment descriptor: %w", err)
	}
	tmp := e.DescriptorPath() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing environment descriptor: %w", err)
	}
	return os.Rename(tmp, e.DescriptorPath())
}

// Attach reads the descriptor of a running environment. path is an env.json
// file or the directory that holds one.
func Attach(path string) (*Env, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "env.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading environment descriptor %q (from %s): %w", path, AttachVariable, err)
	}
	e := &Env{}
	if err := json.Unmarshal(data, e); err != nil {
		return nil, fmt.Errorf("decoding environment descriptor %q: %w", path, err)
	}
	e.attached = true
	if err := e.WaitReady(defaultReadyTimeout); err != nil {
		return nil, fmt.Errorf("environment %q is not answering: %w", path, err)
	}
	return e, nil
}

// Stop stops every process the environment started and removes its
// directory. It does nothing for an attached environment.
func (e *Env) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.attached || e.stop == nil {
		return nil
	}
	var err error
	if e.Kube != nil {
		err = e.Kube.Stop()
	}
	if stopErr := e.stop(); stopErr != nil {
		err = stopErr
	}
	e.stop = nil
	return err
}

// Shard returns the shard with the given name.
func (e *Env) Shard(name string) (Shard, error) {
	names := make([]string, 0, len(e.Shards))
	for _, s := range e.Shards {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Shard{}, fmt.Errorf("no shard %q in this %s environment (shards: %s)", name, e.Topology, strings.Join(names, ", "))
}

// TailLogs returns the last lines of every process log, to explain a failure.
func (e *Env) TailLogs(lines int) string {
	var b strings.Builder
	for _, f := range e.LogFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(all) > lines {
			all = all[len(all)-lines:]
		}
		fmt.Fprintf(&b, "==> %s <==\n%s\n", f, strings.Join(all, "\n"))
	}
	return b.String()
}

// ProxyErrors returns the last lines of the front-proxy's log that report a
// request it could not carry to a shard (answered 502 Bad Gateway with an
// empty body, which clients show as `an error on the server ("")`), to
// explain a failure; "" when there are none. Requests their client gave up
// on are left out.
func (e *Env) ProxyErrors(lines int) string {
	var found []string
	for _, f := range e.LogFiles {
		if filepath.Base(f) != "kcp-front-proxy.log" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, "proxy error") && !strings.Contains(l, "context canceled") {
				found = append(found, l)
			}
		}
	}
	if len(found) > lines {
		found = found[len(found)-lines:]
	}
	return strings.Join(found, "\n")
}
