package controller

import (
	"flag"
	"fmt"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// Options configure the controller binary.
type Options struct {
	process.Common
	WebhookURL            string
	CABundleFile          string
	WebhookTimeoutSeconds int32
	// WebhookMutateURL is the webhook's reference index endpoint; empty
	// means derived from WebhookURL (see MutateURL).
	WebhookMutateURL string
	// WebhookPropagation is how long a rule waits after its webhook
	// configuration entry is written before it is reported Ready.
	WebhookPropagation      time.Duration
	LeaderElect             bool
	LeaderElectionNamespace string
	ResolverTTL             time.Duration
	ResyncPeriod            time.Duration
	// Settle publishes the stamps of the rules in the deletion webhooks'
	// object selectors, with the entries settling needs (package settle).
	Settle bool
}

// Defaults of the controller's flags that other code needs too.
const (
	// DefaultMetricsAddr and DefaultProbeAddr are the controller's own,
	// so that it runs beside the webhook on one host with the defaults.
	DefaultMetricsAddr = ":8080"
	DefaultProbeAddr   = ":8081"
	// DefaultWebhookTimeoutSeconds is the installed configurations'
	// timeoutSeconds.
	DefaultWebhookTimeoutSeconds = 10
)

// BindFlags registers the controller's flags on fs, with their defaults,
// bound to o: the binary parses its arguments with them, and the
// deployment renderer and the Terraform import write and read the
// controller's arguments with them (process.Render, process.Parse).
func (o *Options) BindFlags(fs *flag.FlagSet) {
	o.Common.BindFlags(fs, DefaultMetricsAddr, DefaultProbeAddr)
	fs.StringVar(&o.WebhookURL, "webhook-url", "", "https URL of the webhook's /validate endpoint, as kcp reaches it; the /mutate endpoint is derived from it")
	fs.StringVar(&o.WebhookMutateURL, "webhook-mutate-url", "", "https URL of the webhook's /mutate (reference index) endpoint, as kcp reaches it (default: --webhook-url with /mutate in place of a trailing /validate, or appended)")
	fs.StringVar(&o.CABundleFile, "webhook-ca-bundle-file", "", "PEM file with the CA of the webhook's serving certificate; re-read when it changes")
	o.WebhookTimeoutSeconds = DefaultWebhookTimeoutSeconds
	fs.Var((*process.Int32)(&o.WebhookTimeoutSeconds), "webhook-timeout-seconds", "timeoutSeconds of the installed webhook configurations (1-30)")
	fs.DurationVar(&o.WebhookPropagation, "webhook-propagation-delay", DefaultPropagation, "how long after writing a webhook configuration entry a rule is still reported not Ready, while every shard picks the entry up")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader among replicas; only the leader writes")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "default", "namespace in the dep-ctrl workspace that holds the leader election lease")
	fs.DurationVar(&o.ResolverTTL, "workspace-cache-ttl", 30*time.Second, "how long a resolved workspace path is trusted before it is read again")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", time.Minute, "how often everything is recomputed without a change being announced")
	fs.BoolVar(&o.Settle, "settle-objects", true, "publish the stamps of the rules in the deletion webhooks, so that objects the webhook settles (its own --settle-objects) skip it on deletion; off: every deletion of a protected object goes to the webhook")
}

// Validate checks the options before anything connects.
func (o *Options) Validate() error {
	if o.ExportName == "" {
		return fmt.Errorf("--apiexport-name must not be empty")
	}
	if !isHTTPSURL(o.WebhookURL) {
		return fmt.Errorf("--webhook-url %q must be an https URL that kcp can reach, for example https://depctrl-webhook.depctrl.svc:9443%s; the reference index endpoint is derived from it (%s in place of %s) unless --webhook-mutate-url says otherwise",
			o.WebhookURL, validatePath, mutatePath, validatePath)
	}
	if o.WebhookMutateURL != "" && !isHTTPSURL(o.WebhookMutateURL) {
		return fmt.Errorf("--webhook-mutate-url %q must be an https URL that kcp can reach, for example https://depctrl-webhook.depctrl.svc:9443%s", o.WebhookMutateURL, mutatePath)
	}
	if o.CABundleFile == "" {
		return fmt.Errorf("--webhook-ca-bundle-file is required: the PEM CA that signed the webhook's serving certificate")
	}
	if o.WebhookTimeoutSeconds < 1 || o.WebhookTimeoutSeconds > 30 {
		return fmt.Errorf("--webhook-timeout-seconds must be between 1 and 30, got %d", o.WebhookTimeoutSeconds)
	}
	return o.RateLimit.Validate()
}
