// Command depctrl-webhook decides DELETE admission requests for protected
// objects: it keeps a registry of DependencyRules and refuses a deletion
// while a dependent in the consumer workspace still references the object.
package main

import (
	"context"
	"flag"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/decision"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/intent"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/runtime/webhook"
)

var version = "dev"

func main() {
	o := webhook.Options{}
	process.Main("depctrl-webhook", version, func(fs *flag.FlagSet) {
		o.BindFlags(fs, ":8082", ":8083")
		fs.Lookup("health-probe-bind-address").Usage += "; ready once every shard's rules are registered, or once some are and --partial-ready-after has passed"
		fs.StringVar(&o.CertDir, "tls-cert-dir", "", "directory with tls.crt and tls.key; reloaded when they change")
		fs.StringVar(&o.Addr, "bind-address", ":9443", "address the admission endpoint (HTTPS, "+v1alpha1.ValidatePath+") listens on")
		fs.DurationVar(&o.RequestTimeout, "request-timeout", 8*time.Second, "deadline for deciding one request; keep it below the webhook configuration's timeoutSeconds")
		fs.Int64Var(&o.ListPageSize, "list-page-size", decision.DefaultPageSize, "dependents per LIST page when looking for references; a decision holds one page at a time (about half a kilobyte per dependent with small specs), so pages bound the webhook's memory however many dependents a consumer creates; 0 reads all of them in one response, a little faster and unbounded")
		fs.IntVar(&o.ReindexWorkers, "reindex-workers", index.DefaultReindexWorkers, "dependents written again at once to index them when a deletion found them without a current index stamp (written before their rule); needs patch on their type in the consumer's workspace, else each workspace is asked once every few minutes; 0 turns it off")
		fs.DurationVar(&o.IntentLifetime, "intent-lifetime", intent.DefaultLifetime, "how long the intent a dependent's write records on what it newly references holds up that object's deletion while the write may still be stored; must exceed the shards' --request-timeout (60s by default)")
		fs.BoolVar(&o.Settle, "settle-objects", true, "label the protected objects found unreferenced as settled, so that their deletions skip the webhook (see the architecture guide, \"Settled objects\"); false: every deletion of a protected object comes to the webhook")
		fs.DurationVar(&o.SettleAfter, "settle-after", settle.DefaultSettleAfter, "with --settle-objects: how long the rules over a type must stand unchanged, and published by the controller, before its objects may be settled; must exceed the shards' --request-timeout (60s by default)")
		fs.StringVar(&o.PendingNamespace, "pending-references-namespace", "default", "namespace in the dep-ctrl workspace that holds the Leases marking references to objects that do not exist yet, so that such objects are not settled before those writes are stored")
		fs.DurationVar(&o.PartialReadyAfter, "partial-ready-after", webhook.DefaultPartialReadyAfter, "when some shard's rules cannot be read, report ready this long after start anyway, having read the others: requests whose rules live on the shards read are then decided, the others refused (retry later); negative: stay unready until every shard is read")
		fs.BoolVar(&o.IgnoreDeletingDependents, "ignore-deleting-dependents", true, "dependents that are being deleted do not block, so finalizer chains cannot deadlock")
		fs.Func("skip-protection-groups", "comma-separated groups whose members may delete with the "+v1alpha1.SkipProtectionAnnotation+" annotation; for others it is ignored (default: anyone may)", func(v string) error {
			for _, g := range strings.Split(v, ",") {
				if g = strings.TrimSpace(g); g != "" {
					o.SkipProtectionGroups = append(o.SkipProtectionGroups, g)
				}
			}
			return nil
		})
	}, func(ctx context.Context, log logr.Logger) error {
		return webhook.Run(ctx, o, log)
	})
}
