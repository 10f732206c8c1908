// Package process is what the two runtime binaries, depctrl-controller and
// depctrl-webhook, share as processes: the options that say where kcp is
// and where metrics and probes are served, and their flags (which the
// deployment renderer and the Terraform import use too); the kubeconfig
// they connect to kcp with, which must point at the dep-ctrl workspace
// through the front-proxy, its rate limit and scheme; the
// controller-runtime manager built from them; the Events both record
// (events.go); and main's parsing of the arguments, logging and exit.
//
// It also reaches the dep-ctrl export's virtual workspaces, one per shard,
// each serving the workspaces on that shard that bound the export. What
// the binaries watch there lives in the kcp APIExport provider's cache of
// each shard (Shards, Cached in shards.go and cached.go), which this
// package shapes: a view of each shard that is never partial nor stale
// (view.go, live.go), verified against lists (verify.go). What must be
// read from the server (the shards' URLs, fresh lists, writes) goes
// through VirtualWorkspaces (virtualworkspaces.go).
//
// And it reads what an APIExport serves, the export and its
// APIResourceSchemas, through whatever client reaches them (ExportCache,
// exports.go): the controller through the virtual workspaces, for each
// rule's TypesServed condition, and the Terraform provider with its own
// credentials, for the same check at plan.
package process

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Common are the options both binaries take.
type Common struct {
	// Kubeconfig's server is the dep-ctrl workspace through the kcp
	// front-proxy; Context picks its context, empty the current one.
	Kubeconfig string
	Context    string
	// ExportName names the dep-ctrl APIExport and its
	// APIExportEndpointSlice.
	ExportName  string
	MetricsAddr string
	ProbeAddr   string
	// RateLimit limits the requests to kcp; the zero value is
	// DefaultRateLimit.
	RateLimit RateLimit
}

// BindFlags registers the flags of the common options on fs. metricsAddr
// and probeAddr are the defaults of the two addresses: each binary has its
// own, so that both run side by side on one host with their defaults.
func (c *Common) BindFlags(fs *flag.FlagSet, metricsAddr, probeAddr string) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig whose server is the dep-ctrl workspace through the kcp front-proxy (https://<front-proxy>/clusters/<path>); the front-proxy base is derived from it")
	fs.StringVar(&c.Context, "context", "", "kubeconfig context (default: the current context)")
	fs.StringVar(&c.ExportName, "apiexport-name", v1alpha1.DefaultAPIExportName, "name of the dep-ctrl APIExport (and of its APIExportEndpointSlice)")
	fs.StringVar(&c.MetricsAddr, "metrics-bind-address", metricsAddr, "address of the Prometheus metrics endpoint (0 disables it)")
	fs.StringVar(&c.ProbeAddr, "health-probe-bind-address", probeAddr, "address of the /healthz and /readyz probes")
	c.RateLimit.BindFlags(fs)
}

// Connect loads the workspace c.Kubeconfig names, limited to c.RateLimit,
// and builds the process's manager on it: the runtime's scheme, metrics
// and probes at c's addresses, and a /healthz that answers while the
// process runs. mo holds what the binary needs besides, such as leader
// election.
func (c Common) Connect(mo manager.Options, log logr.Logger) (*Workspace, manager.Manager, error) {
	ws, err := Load(c.Kubeconfig, c.Context)
	if err != nil {
		return nil, nil, err
	}
	ws.Apply(c.RateLimit)
	mo.Scheme, err = Scheme()
	if err != nil {
		return nil, nil, fmt.Errorf("building the scheme: %w", err)
	}
	mo.Metrics = metricsserver.Options{BindAddress: c.MetricsAddr}
	mo.HealthProbeBindAddress = c.ProbeAddr
	mo.Logger = log
	mgr, err := manager.New(ws.Config, mo)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, fmt.Errorf("adding the liveness check: %w", err)
	}
	return ws, mgr, nil
}

// Main runs the binary name at version. It gives bind a flag set of its
// own (controller-runtime registers --kubeconfig on the global one, with
// another meaning) and adds --version and the logging flags; it then
// parses the arguments and, unless asked for the version, calls run with a
// context that ends on SIGTERM or SIGINT and the logger the flags set up.
// The process exits 1 when run fails.
func Main(name, version string, bind func(*flag.FlagSet), run func(context.Context, logr.Logger) error) {
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	bind(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	_ = fs.Parse(os.Args[1:])

	if *showVersion {
		fmt.Println(version)
		return
	}
	log := zap.New(zap.UseFlagOptions(&zapOpts))
	ctrl.SetLogger(log)
	log.Info(name, "version", version)
	if err := run(ctrl.SetupSignalHandler(), log); err != nil {
		log.Error(err, name+" failed")
		os.Exit(1)
	}
}
