// Command depctrl-controller watches DependencyRules through the dep-ctrl
// APIExport's virtual workspace and installs the deletion-protection webhook
// configuration in every provider workspace that a rule protects, and the
// reference index webhook configuration next to the rules.
package main

import (
	"context"
	"flag"
	"time"

	"github.com/go-logr/logr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/controller"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

var version = "dev"

func main() {
	o := controller.Options{}
	var timeout int
	process.Main("depctrl-controller", version, func(fs *flag.FlagSet) {
		o.BindFlags(fs, ":8080", ":8081")
		fs.StringVar(&o.WebhookURL, "webhook-url", "", "https URL of the webhook's /validate endpoint, as kcp reaches it; the /mutate endpoint is derived from it")
		fs.StringVar(&o.WebhookMutateURL, "webhook-mutate-url", "", "https URL of the webhook's /mutate (reference index) endpoint, as kcp reaches it (default: --webhook-url with /mutate in place of a trailing /validate, or appended)")
		fs.StringVar(&o.CABundleFile, "webhook-ca-bundle-file", "", "PEM file with the CA of the webhook's serving certificate; re-read when it changes")
		fs.IntVar(&timeout, "webhook-timeout-seconds", 10, "timeoutSeconds of the installed webhook configurations (1-30)")
		fs.DurationVar(&o.WebhookPropagation, "webhook-propagation-delay", controller.DefaultPropagation, "how long after writing a webhook configuration entry a rule is still reported not Ready, while every shard picks the entry up")
		fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader among replicas; only the leader writes")
		fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "default", "namespace in the dep-ctrl workspace that holds the leader election lease")
		fs.DurationVar(&o.ResolverTTL, "workspace-cache-ttl", 30*time.Second, "how long a resolved workspace path is trusted before it is read again")
		fs.DurationVar(&o.ResyncPeriod, "resync-period", time.Minute, "how often everything is recomputed without a change being announced")
		fs.BoolVar(&o.Settle, "settle-objects", true, "publish the stamps of the rules in the deletion webhooks, so that objects the webhook settles (its own --settle-objects) skip it on deletion; off: every deletion of a protected object goes to the webhook")
	}, func(ctx context.Context, log logr.Logger) error {
		o.WebhookTimeoutSeconds = int32(timeout) //nolint:gosec // range checked by Validate
		return controller.Run(ctx, o, log)
	})
}
