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
// skip-protection groups are written only when set (WebhookArgs).
func WebhookRendered(o *webhook.Options) []any {
	return []any{&o.Kubeconfig, &o.ExportName, &o.CertDir, &o.Addr, &o.MetricsAddr, &o.ProbeAddr, &o.Settle}
}

// webhookRenderedWithGroups is WebhookRendered with the skip-protection
// groups.
func webhookRenderedWithGroups(o *webhook.Options) []any {
	return append(WebhookRendered(o), &o.SkipProtectionGroups)
}

// WebhookArgs are the webhook's arguments for c, before its extra ones.
func (c Config) WebhookArgs() []string {
	fields := WebhookRendered
	if len(c.SkipProtectionGroups) > 0 {
		fields = webhookRenderedWithGroups
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
	}, fields)
}

// WebhookRenderedNames are the names of every webhook flag the renderer
// may write, in order: the import takes the leading arguments with these
// names for the rendered ones.
func WebhookRenderedNames() []string { return process.FlagNames(webhookRenderedWithGroups) }

// ControllerRenderedNames are the names of the controller flags the
// renderer writes, in order.
func ControllerRenderedNames() []string { return process.FlagNames(ControllerRendered) }
