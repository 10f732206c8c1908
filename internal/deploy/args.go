package deploy

import (
	"strconv"

	"github.com/depctrl/terraform-provider-depctrl/runtime/controller"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/webhook"
)

// The binaries' arguments are rendered from their options (package
// process): this file says which options a configuration sets, and the
// binaries' own flag sets give the names. The Terraform import reads them
// back with the same lists (ControllerRendered, WebhookRendered).

// ControllerRendered lists the controller options the renderer writes,
// in the order of the arguments; the user's extra arguments follow them.
func ControllerRendered(o *controller.Options) []any {
	return []any{&o.Kubeconfig, &o.ExportName, &o.WebhookURL, &o.CABundleFile, &o.LeaderElect, &o.MetricsAddr, &o.ProbeAddr, &o.Settle}
}

// ControllerArgs are the controller's arguments for c, before its extra
// ones. Every rendered option is written, its default too: the import
// tells a configuration's values from the binary's defaults by them.
func (c Config) ControllerArgs() []string {
	return process.Render(func(o *controller.Options) {
		o.Kubeconfig = KubeconfigDir + "/" + KubeconfigKey
		o.ExportName = c.APIExportName
		o.WebhookURL = c.EffectiveWebhookURL()
		o.CABundleFile = CADir + "/" + CAKey
		// Always on: a second replica, added later, must not fight.
		o.LeaderElect = true
		o.MetricsAddr = ":" + strconv.Itoa(ControllerMetricsPort)
		o.ProbeAddr = ":" + strconv.Itoa(ControllerProbePort)
		o.Settle = c.SettleObjects
	}, ControllerRendered)
}

// WebhookRendered lists the webhook options the renderer writes, in the
// order of the arguments; the user's extra arguments follow them. The
// options of webhookRenderedWhenSet follow only when a configuration sets
// them (WebhookArgs).
func WebhookRendered(o *webhook.Options) []any {
	return []any{&o.Kubeconfig, &o.ExportName, &o.CertDir, &o.Addr, &o.MetricsAddr, &o.ProbeAddr, &o.Settle}
}

// webhookRenderedWhenSet lists the webhook options the renderer writes
// only when a configuration sets them, in the order of their arguments
// after WebhookRendered's: the skip-protection groups, and deferred
// deletion when it is on. A configuration without them renders exactly the
// arguments it did before they existed, so its pods do not roll.
func webhookRenderedWhenSet(o *webhook.Options) []any {
	return []any{&o.SkipProtectionGroups, &o.DeferredDeletion}
}

// webhookRenderedAll is WebhookRendered with every option of
// webhookRenderedWhenSet: the arguments the renderer may write, in order.
func webhookRenderedAll(o *webhook.Options) []any {
	return append(WebhookRendered(o), webhookRenderedWhenSet(o)...)
}

// WebhookArgs are the webhook's arguments for c, before its extra ones.
func (c Config) WebhookArgs() []string {
	fields := func(o *webhook.Options) []any {
		f := WebhookRendered(o)
		if len(c.SkipProtectionGroups) > 0 {
			f = append(f, &o.SkipProtectionGroups)
		}
		if c.DeferredDeletion {
			f = append(f, &o.DeferredDeletion)
		}
		return f
	}
	return process.Render(func(o *webhook.Options) {
		o.Kubeconfig = KubeconfigDir + "/" + KubeconfigKey
		o.ExportName = c.APIExportName
		o.CertDir = TLSDir
		o.Addr = ":" + strconv.Itoa(int(c.WebhookPort))
		o.MetricsAddr = ":" + strconv.Itoa(WebhookMetricsPort)
		o.ProbeAddr = ":" + strconv.Itoa(WebhookProbePort)
		o.Settle = c.SettleObjects
		o.SkipProtectionGroups = c.SkipProtectionGroups
		o.DeferredDeletion = c.DeferredDeletion
	}, fields)
}

// WebhookRenderedNames are the names of every webhook flag the renderer
// may write, in order: the import takes the leading arguments with these
// names for the rendered ones.
func WebhookRenderedNames() []string { return process.FlagNames(webhookRenderedAll) }

// ControllerRenderedNames are the names of the controller flags the
// renderer writes, in order.
func ControllerRenderedNames() []string { return process.FlagNames(ControllerRendered) }
