// Command depctrl-controller watches DependencyRules through the dep-ctrl
// APIExport's virtual workspace and installs the deletion-protection webhook
// configuration in every provider workspace that a rule protects, and the
// reference index webhook configuration next to the rules.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/controller"
)

var version = "dev"

func main() {
	// An own flag set: controller-runtime registers --kubeconfig on the
	// global one, with a different meaning.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	o := controller.Options{}
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig whose server is the dep-ctrl workspace through the kcp front-proxy (https://<front-proxy>/clusters/<path>)")
	fs.StringVar(&o.Context, "context", "", "kubeconfig context (default: the current context)")
	fs.StringVar(&o.ExportName, "apiexport-name", v1alpha1.DefaultAPIExportName, "name of the dep-ctrl APIExport (and of its APIExportEndpointSlice)")
	fs.StringVar(&o.WebhookURL, "webhook-url", "", "https URL of the webhook's /validate endpoint, as kcp reaches it; the /mutate endpoint is derived from it")
	fs.StringVar(&o.WebhookMutateURL, "webhook-mutate-url", "", "https URL of the webhook's /mutate (reference index) endpoint, as kcp reaches it (default: --webhook-url with /mutate in place of a trailing /validate, or appended)")
	fs.StringVar(&o.CABundleFile, "webhook-ca-bundle-file", "", "PEM file with the CA of the webhook's serving certificate; re-read when it changes")
	var timeout int
	fs.IntVar(&timeout, "webhook-timeout-seconds", 10, "timeoutSeconds of the installed webhook configurations (1-30)")
	fs.DurationVar(&o.WebhookPropagation, "webhook-propagation-delay", controller.DefaultPropagation, "how long after writing a webhook configuration entry a rule is still reported not Ready, while every shard picks the entry up")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz probes")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader among replicas; only the leader writes")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "default", "namespace in the dep-ctrl workspace that holds the leader election lease")
	fs.DurationVar(&o.ResolverTTL, "workspace-cache-ttl", 30*time.Second, "how long a resolved workspace path is trusted before it is read again")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", time.Minute, "how often everything is recomputed without a change being announced")
	fs.BoolVar(&o.Settle, "settle-objects", true, "publish the stamps of the rules in the deletion webhooks, so that objects the webhook settles (its own --settle-objects) skip it on deletion; off: every deletion of a protected object goes to the webhook")
	o.RateLimit.BindFlags(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	_ = fs.Parse(os.Args[1:])
	o.WebhookTimeoutSeconds = int32(timeout) //nolint:gosec // range checked by Validate

	if *showVersion {
		fmt.Println(version)
		return
	}
	log := zap.New(zap.UseFlagOptions(&zapOpts))
	ctrl.SetLogger(log)
	log.Info("depctrl-controller", "version", version)
	if err := controller.Run(ctrl.SetupSignalHandler(), o, log); err != nil {
		log.Error(err, "controller failed")
		os.Exit(1)
	}
}
