// Command depctrl-webhook decides DELETE admission requests for protected
// objects: it keeps a registry of DependencyRules and refuses a deletion
// while a dependent in the consumer workspace still references the object.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/decision"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/intent"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/runtime/webhook"
)

var version = "dev"

func main() {
	// An own flag set: controller-runtime registers --kubeconfig on the
	// global one, with a different meaning.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	o := webhook.Options{}
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig whose server is the dep-ctrl workspace through the kcp front-proxy (https://<front-proxy>/clusters/<path>); the front-proxy base is derived from it")
	fs.StringVar(&o.Context, "context", "", "kubeconfig context (default: the current context)")
	fs.StringVar(&o.ExportName, "apiexport-name", v1alpha1.DefaultAPIExportName, "name of the dep-ctrl APIExport (and of its APIExportEndpointSlice)")
	fs.StringVar(&o.CertDir, "tls-cert-dir", "", "directory with tls.crt and tls.key; reloaded when they change")
	fs.StringVar(&o.Addr, "bind-address", ":9443", "address the admission endpoint (HTTPS, "+v1alpha1.ValidatePath+") listens on")
	// The controller's defaults are :8080 and :8081: the two binaries can
	// run side by side on one host with their defaults.
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8082", "address of the Prometheus metrics endpoint (0 disables it)")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8083", "address of the /healthz and /readyz probes; ready once every shard's rules are registered, or once some are and --partial-ready-after has passed")
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
	o.RateLimit.BindFlags(fs)
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
	log.Info("depctrl-webhook", "version", version)
	if err := webhook.Run(ctrl.SetupSignalHandler(), o, log); err != nil {
		log.Error(err, "webhook failed")
		os.Exit(1)
	}
}
