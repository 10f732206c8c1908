// Package runtimetest runs the depctrl controller and webhook as real
// processes, built from this repository, under their own non-admin
// identities, for integration and acceptance tests.
package runtimetest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// Binaries builds the controller and webhook once per test binary and
// returns the directory holding them.
func Binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "depctrl-runtime-bin-")
		if buildErr != nil {
			return
		}
		root, err := env.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/depctrl-controller", "./cmd/depctrl-webhook")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the runtime: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// Runtime is a controller and a webhook running as processes under their
// own identities.
type Runtime struct {
	Dir        string
	WebhookURL string
	CAFile     string
	// CertDir holds the webhook's tls.crt and tls.key; it reloads them.
	CertDir string
	// WebhookMetricsURL and WebhookReadyzURL are the webhook's endpoints.
	WebhookMetricsURL string
	WebhookReadyzURL  string
	// ControllerReadyzURL and ControllerMetricsURL are the controller's
	// endpoints.
	ControllerReadyzURL  string
	ControllerMetricsURL string
	probePort            int
	ctrlKubeconfig       string
	controller           *env.Process
	webhook              *env.Process
	ctrlArgs             []string
	whArgs               []string
	bin                  string
}

// Start starts the webhook and the controller against the dep-ctrl
// workspace at depCtrlPath and waits until the webhook is ready.
func Start(ctx context.Context, t *testing.T, e *env.Env, depCtrlPath string) *Runtime {
	t.Helper()
	bin := Binaries(t)
	dir := t.TempDir()
	ports := freePorts(t, 5)
	bundle, err := certs.Issue("depctrl-webhook", []string{"127.0.0.1", "localhost"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(dir, "tls")
	check.Must(t, os.MkdirAll(certDir, 0o700))
	check.Must(t, os.WriteFile(filepath.Join(certDir, "tls.crt"), bundle.ServerCert, 0o600))
	check.Must(t, os.WriteFile(filepath.Join(certDir, "tls.key"), bundle.ServerKey, 0o600))
	caFile := filepath.Join(dir, "ca.crt")
	check.Must(t, os.WriteFile(caFile, bundle.CACert, 0o600))

	kubeconfigFor := func(user string) string {
		id, err := e.Identity(user)
		check.Must(t, err)
		data, err := e.IdentityKubeconfig(id, depCtrlPath)
		check.Must(t, err)
		p := filepath.Join(dir, user+".kubeconfig")
		check.Must(t, os.WriteFile(p, data, 0o600))
		return p
	}
	r := &Runtime{
		Dir:        dir,
		WebhookURL: fmt.Sprintf("https://127.0.0.1:%d/validate", ports[0]),
		CAFile:     caFile,
		CertDir:    certDir,
		probePort:  ports[2],
		bin:        bin,
	}
	r.WebhookMetricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])
	r.WebhookReadyzURL = fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2])
	r.ControllerReadyzURL = fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[4])
	r.ControllerMetricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[3])
	r.whArgs = []string{
		"--kubeconfig", kubeconfigFor(env.WebhookUser),
		"--tls-cert-dir", certDir,
		"--bind-address", fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[2]),
		// A shared kcp holds every test's workspaces, and each test's
		// webhook walks all of them whenever its rules change: paced
		// below the default, so that the walks of many tests do not
		// crowd the others' requests. A test of the walk sets its own.
		"--settle-walk-rate", "10",
	}
	r.ctrlKubeconfig = kubeconfigFor(env.ControllerUser)
	r.ctrlArgs = []string{
		"--kubeconfig", r.ctrlKubeconfig,
		"--webhook-url", r.WebhookURL,
		"--webhook-ca-bundle-file", caFile,
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[3]),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[4]),
		"--resync-period", "20s",
	}
	// Milliseconds in the logs, so that a kept log lines up with a test's
	// own timestamps.
	for _, args := range []*[]string{&r.whArgs, &r.ctrlArgs} {
		*args = append(*args, "--zap-time-encoding", "rfc3339nano")
	}
	if level := os.Getenv(LogLevelEnv); level != "" {
		r.whArgs = append(r.whArgs, "--zap-log-level", level)
		r.ctrlArgs = append(r.ctrlArgs, "--zap-log-level", level)
	}
	t.Cleanup(func() {
		r.StopController(t)
		r.StopWebhook(t)
		for _, f := range []string{"webhook.log", "controller.log"} {
			data, _ := os.ReadFile(filepath.Join(dir, f))
			if t.Failed() {
				t.Logf("==> %s <==\n%s", f, Tail(string(data), 60))
			}
			KeepLog(t, f, data)
		}
	})
	r.StartWebhook(ctx, t)
	r.StartController(t)
	return r
}

// Running reports whether the controller and the webhook are running: started
// and not exited.
func (r *Runtime) Running() (controller, webhook bool) {
	alive := func(p *env.Process) bool {
		if p == nil {
			return false
		}
		exited, _ := p.Exited()
		return !exited
	}
	return alive(r.controller), alive(r.webhook)
}

// Pids returns the process IDs of the controller and the webhook (0 for
// one that is not running).
func (r *Runtime) Pids() (controller, webhook int) {
	if r.controller != nil {
		controller = r.controller.Pid()
	}
	if r.webhook != nil {
		webhook = r.webhook.Pid()
	}
	return controller, webhook
}

// StartWebhookNoWait starts the webhook, with extra arguments after the
// usual ones (later flags win), and returns at once.
func (r *Runtime) StartWebhookNoWait(t *testing.T, extra ...string) {
	t.Helper()
	args := append(append([]string(nil), r.whArgs...), extra...)
	p, err := env.StartProcess("depctrl-webhook", filepath.Join(r.bin, "depctrl-webhook"), args, r.Dir, filepath.Join(r.Dir, "webhook.log"))
	check.Must(t, err)
	r.webhook = p
}

// WebhookReady asks the webhook's readiness probe.
func (r *Runtime) WebhookReady() error {
	if r.webhook == nil {
		return fmt.Errorf("the webhook is not running")
	}
	if done, err := r.webhook.Exited(); done {
		return fmt.Errorf("webhook exited: %v", err)
	}
	return Readyz("http://127.0.0.1:" + strconv.Itoa(r.probePort) + "/readyz")
}

// Readyz asks a readiness probe at url: nil when it answers 200.
func Readyz(url string) error {
	resp, err := http.Get(url) //nolint:noctx // a probe on loopback
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s", resp.Status)
	}
	return nil
}

// StartWebhook starts the webhook, with extra arguments after the usual
// ones (later flags win), and waits until it reports ready.
func (r *Runtime) StartWebhook(ctx context.Context, t *testing.T, extra ...string) {
	t.Helper()
	r.StartWebhookNoWait(t, extra...)
	check.Eventually(ctx, t, time.Minute, "the webhook to become ready", r.WebhookReady)
}

// StartController starts the controller.
func (r *Runtime) StartController(t *testing.T) {
	t.Helper()
	p, err := env.StartProcess("depctrl-controller", filepath.Join(r.bin, "depctrl-controller"), r.ctrlArgs, r.Dir, filepath.Join(r.Dir, "controller.log"))
	check.Must(t, err)
	r.controller = p
}

// EnableSettling restarts both binaries with --settle-objects (their
// default, explicit here), the webhook also with webhookExtra (such as a
// shorter --settle-after), and waits until the webhook is ready; later
// restarts keep the flags.
func (r *Runtime) EnableSettling(ctx context.Context, t *testing.T, webhookExtra ...string) {
	t.Helper()
	r.StopController(t)
	r.StopWebhook(t)
	r.ctrlArgs = append(r.ctrlArgs, "--settle-objects")
	r.whArgs = append(append(r.whArgs, "--settle-objects"), webhookExtra...)
	r.StartWebhook(ctx, t)
	r.StartController(t)
}

// SetSettling restarts both binaries with --settle-objects set to on, one
// after the other, in the order an apply rolls them out: the webhook first
// (with webhookExtra too), then the controller. The other stays up
// meanwhile; later restarts keep the flags.
func (r *Runtime) SetSettling(ctx context.Context, t *testing.T, on bool, webhookExtra ...string) {
	t.Helper()
	flag := fmt.Sprintf("--settle-objects=%t", on)
	r.StopWebhook(t)
	r.whArgs = append(append(r.whArgs, flag), webhookExtra...)
	r.StartWebhook(ctx, t)
	r.StopController(t)
	r.ctrlArgs = append(r.ctrlArgs, flag)
	r.StartController(t)
}

// StopWebhook stops the webhook process.
func (r *Runtime) StopWebhook(t *testing.T) {
	if r.webhook != nil {
		if err := r.webhook.Stop(10 * time.Second); err != nil {
			t.Errorf("stopping webhook: %v", err)
		}
		r.webhook = nil
	}
}

// StopController stops the controller process.
func (r *Runtime) StopController(t *testing.T) {
	if r.controller != nil {
		if err := r.controller.Stop(10 * time.Second); err != nil {
			t.Errorf("stopping controller: %v", err)
		}
		r.controller = nil
	}
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := env.FreePorts(n)
	check.Must(t, err)
	return ports
}

// Tail returns the last lines of s, for logs in failure reports.
func Tail(s string, lines int) string {
	n := 0
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			n++
			if n > lines {
				return s[i+1:]
			}
		}
	}
	return s
}

// KeepLogsEnv names a directory where every test's runtime logs are kept
// whole (the output of a failed test shows their tail only).
const KeepLogsEnv = "DEPCTRL_TEST_KEEP_LOGS"

// LogLevelEnv sets both binaries' --zap-log-level (e.g. "debug" or "2").
const LogLevelEnv = "DEPCTRL_TEST_LOG_LEVEL"

// KeepLog copies a test's log into $DEPCTRL_TEST_KEEP_LOGS, if set.
func KeepLog(t *testing.T, name string, data []byte) {
	dir := os.Getenv(KeepLogsEnv)
	if dir == "" {
		return
	}
	p := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"."+name)
	if err := os.MkdirAll(dir, 0o755); err == nil {
		err = os.WriteFile(p, data, 0o600)
		if err == nil {
			if t.Failed() {
				t.Logf("whole log kept at %s", p)
			}
			return
		}
	}
	t.Logf("keeping %s: could not write %s", name, p)
}

// StartControllerReplica starts one more controller with the same
// arguments plus extra (later flags win, so extra can move its ports), and
// logs to <name>.log in the runtime's directory. It is stopped with the
// test.
func (r *Runtime) StartControllerReplica(t *testing.T, name string, extra ...string) (*env.Process, string) {
	t.Helper()
	args := append(append([]string(nil), r.ctrlArgs...), extra...)
	return r.startReplica(t, name, "depctrl-controller", args)
}

// startReplica starts binary as one more process called name, logging to
// <name>.log in the runtime's directory, and stops it with the test, its
// log's tail shown when the test failed and the log kept when asked.
func (r *Runtime) startReplica(t *testing.T, name, binary string, args []string) (*env.Process, string) {
	t.Helper()
	logFile := filepath.Join(r.Dir, name+".log")
	p, err := env.StartProcess(name, filepath.Join(r.bin, binary), args, r.Dir, logFile)
	check.Must(t, err)
	t.Cleanup(func() {
		if err := p.Stop(10 * time.Second); err != nil {
			t.Errorf("stopping %s: %v", name, err)
		}
		data, _ := os.ReadFile(logFile)
		if t.Failed() {
			t.Logf("==> %s <==\n%s", filepath.Base(logFile), Tail(string(data), 60))
		}
		KeepLog(t, filepath.Base(logFile), data)
	})
	return p, logFile
}

// ProxyController makes the controller reach kcp, the front-proxy and every
// shard's virtual workspace alike, through the HTTP proxy at proxyURL (its
// kubeconfig's proxy-url), from its next start on: a test's proxy can then
// cut it off from one shard.
func (r *Runtime) ProxyController(t *testing.T, proxyURL string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(r.ctrlKubeconfig)
	check.Must(t, err)
	for _, c := range cfg.Clusters {
		c.ProxyURL = proxyURL
	}
	check.Must(t, clientcmd.WriteToFile(*cfg, r.ctrlKubeconfig))
}

// ProxiedWebhookKubeconfig writes a copy of the webhook's kubeconfig that
// reaches kcp, the front-proxy and every shard's virtual workspace through
// the HTTP proxy at proxyURL, and returns its path: a replica started with
// it (StartWebhookReplica's extra "--kubeconfig") can be cut off from one
// shard while the others run as before.
func (r *Runtime) ProxiedWebhookKubeconfig(t *testing.T, proxyURL string) string {
	t.Helper()
	i := slices.Index(r.whArgs, "--kubeconfig")
	if i < 0 || i+1 >= len(r.whArgs) {
		t.Fatalf("the webhook's arguments name no kubeconfig: %v", r.whArgs)
	}
	cfg, err := clientcmd.LoadFromFile(r.whArgs[i+1])
	check.Must(t, err)
	for _, c := range cfg.Clusters {
		c.ProxyURL = proxyURL
	}
	path := strings.TrimSuffix(r.whArgs[i+1], ".kubeconfig") + "-proxied.kubeconfig"
	check.Must(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// MoveWebhook restarts the webhook serving admission requests at addr
// (host:port) instead of WebhookURL's port, and waits until it is ready;
// later restarts keep it there. WebhookURL, which the controller installs,
// stays as it was: something else must serve it then, such as a balancer
// in front of this webhook and its replicas (StartWebhookReplica).
func (r *Runtime) MoveWebhook(ctx context.Context, t *testing.T, addr string) {
	t.Helper()
	r.StopWebhook(t)
	r.whArgs = append(r.whArgs, "--bind-address", addr)
	r.StartWebhook(ctx, t)
}

// WebhookReplica is one more webhook process of a Runtime.
type WebhookReplica struct {
	*env.Process
	// Addr is where it serves admission requests (host:port).
	Addr                  string
	ReadyzURL, MetricsURL string
}

// StartWebhookReplica starts one more webhook with the same arguments
// (settling flags included) on ports of its own, plus extra (later flags
// win), logging to <name>.log in the runtime's directory, and waits until
// it is ready. It is stopped with the test, continued first if paused.
func (r *Runtime) StartWebhookReplica(ctx context.Context, t *testing.T, name string, extra ...string) *WebhookReplica {
	t.Helper()
	ports := freePorts(t, 3)
	w := &WebhookReplica{
		Addr:       fmt.Sprintf("127.0.0.1:%d", ports[0]),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1]),
		ReadyzURL:  fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2]),
	}
	args := append(append([]string(nil), r.whArgs...),
		"--bind-address", w.Addr,
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[2]))
	args = append(args, extra...)
	p, _ := r.startReplica(t, name, "depctrl-webhook", args)
	w.Process = p
	check.Eventually(ctx, t, time.Minute, name+" to become ready", func() error {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited: %v", name, err)
		}
		return Readyz(w.ReadyzURL)
	})
	return w
}
