package webhook

import (
	"flag"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/decision"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// Options configure the webhook binary.
type Options struct {
	// Common's RateLimit limits the requests to kcp other than the reads
	// and writes of dependents, which are never throttled on this side.
	process.Common
	CertDir        string
	Addr           string
	RequestTimeout time.Duration
	// IgnoreDeletingDependents lets dependents that are being deleted stop
	// blocking.
	IgnoreDeletingDependents bool
	// SkipProtectionGroups restricts the skip-protection annotation to
	// members of these groups; empty means anyone.
	SkipProtectionGroups []string
	// ListPageSize is the page size of dependent lookups; 0 reads all
	// dependents in one response. The webhook's flag defaults to
	// decision.DefaultPageSize.
	ListPageSize int64
	// ReindexWorkers is how many dependents found unindexed are written
	// again at once to index them; 0 turns re-indexing off.
	ReindexWorkers int
	// IntentLifetime is how long an intent recorded on a referenced
	// object counts as a write that may still be stored; the zero value is
	// index.DefaultLifetime.
	IntentLifetime time.Duration
	// Settle turns the settler on (package settle).
	Settle bool
	// SettleAfter is how long the rules over a type must stand unchanged
	// before its objects may be settled; the zero value is
	// DefaultSettleAfter.
	SettleAfter time.Duration
	// SettleWalkRate is how many requests a second the settler's walk
	// makes when it looks for objects to settle that no request showed
	// it; 0 turns the walk off.
	SettleWalkRate float64
	// PendingNamespace is the namespace of the dep-ctrl workspace that
	// holds the marks of references to objects that do not exist yet.
	PendingNamespace string
	// PartialReadyAfter is how long a pod that could read the rules of
	// some shards but not of all waits before it reports ready
	// (RuleSync.PartialReadyAfter); negative: it waits for all.
	PartialReadyAfter time.Duration
	// DeferredDeletion turns deferred deletion on (decision.Replayer).
	DeferredDeletion bool
	// DeferredResync is how often every deferred deletion is tried again;
	// 0 never.
	DeferredResync time.Duration
}

// Defaults of the webhook's flags that other code needs too: its own
// metrics and probe addresses, so that it runs beside the controller on
// one host with the defaults.
const (
	DefaultMetricsAddr = ":8082"
	DefaultProbeAddr   = ":8083"
	DefaultAddr        = ":9443"
)

// BindFlags registers the webhook's flags on fs, with their defaults,
// bound to o: the binary parses its arguments with them, and the
// deployment renderer and the Terraform import write and read the
// webhook's arguments with them (process.Render, process.Parse).
func (o *Options) BindFlags(fs *flag.FlagSet) {
	o.Common.BindFlags(fs, DefaultMetricsAddr, DefaultProbeAddr)
	fs.Lookup("health-probe-bind-address").Usage += "; ready once every shard's rules are registered, or once some are and --partial-ready-after has passed"
	fs.StringVar(&o.CertDir, "tls-cert-dir", "", "directory with tls.crt and tls.key; reloaded when they change")
	fs.StringVar(&o.Addr, "bind-address", DefaultAddr, "address the admission endpoint (HTTPS, "+v1alpha1.ValidatePath+") listens on")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", 8*time.Second, "deadline for deciding one request; keep it below the webhook configuration's timeoutSeconds")
	fs.Int64Var(&o.ListPageSize, "list-page-size", decision.DefaultPageSize, "dependents per LIST page when looking for references; a decision holds one page at a time (about half a kilobyte per dependent with small specs), so pages bound the webhook's memory however many dependents a consumer creates; 0 reads all of them in one response, a little faster and unbounded")
	fs.IntVar(&o.ReindexWorkers, "reindex-workers", index.DefaultReindexWorkers, "dependents written again at once to index them when a deletion found them without a current index stamp (written before their rule); needs patch on their type in the consumer's workspace, else each workspace is asked once every few minutes; 0 turns it off")
	fs.DurationVar(&o.IntentLifetime, "intent-lifetime", index.DefaultLifetime, "how long the intent a dependent's write records on what it newly references holds up that object's deletion while the write may still be stored; must exceed the shards' --request-timeout (60s by default)")
	fs.BoolVar(&o.Settle, "settle-objects", true, "label the protected objects found unreferenced as settled, so that their deletions skip the webhook (see the architecture guide, \"Settled objects\"); false: every deletion of a protected object comes to the webhook")
	fs.DurationVar(&o.SettleAfter, "settle-after", settle.DefaultSettleAfter, "with --settle-objects: how long the rules over a type must stand unchanged, and published by the controller, before its objects may be settled; must exceed the shards' --request-timeout (60s by default)")
	fs.Float64Var(&o.SettleWalkRate, "settle-walk-rate", decision.DefaultWalkRate, "with --settle-objects: requests a second, at most, of the walk from the root workspace that finds the protected objects no request showed this replica (those there before it started, or before their rule), each time the rules over a type change: a LIST page of Workspaces per workspace, and one of APIBindings per workspace for every protected type at once; needs list on workspaces.tenancy.kcp.io on every shard; 0 turns the walk off, and such objects are settled only once something is created or deleted beside them")
	fs.StringVar(&o.PendingNamespace, "pending-references-namespace", "default", "namespace in the dep-ctrl workspace that holds the Leases marking references to objects that do not exist yet, so that such objects are not settled before those writes are stored")
	fs.DurationVar(&o.PartialReadyAfter, "partial-ready-after", DefaultPartialReadyAfter, "when some shard's rules cannot be read, report ready this long after start anyway, having read the others: requests whose rules live on the shards read are then decided, the others refused (retry later); negative: stay unready until every shard is read")
	fs.BoolVar(&o.IgnoreDeletingDependents, "ignore-deleting-dependents", true, "dependents that are being deleted do not block, so finalizer chains cannot deadlock")
	fs.BoolVar(&o.DeferredDeletion, "deferred-deletion", false, "record a deletion refused because dependents reference the object, when the object or its namespace carries "+v1alpha1.DeferDeletionAnnotation+"=true, and delete the object once nothing references it, with the options of the refused request; needs delete on the protected types and create on subjectaccessreviews on every shard (depctrl_shard deferred_deletion)")
	fs.DurationVar(&o.DeferredResync, "deferred-deletion-resync", decision.DefaultReplayResync, "with --deferred-deletion: how often every deferred deletion is tried again (the webhook's own record of each, Leases in --pending-references-namespace of the dep-ctrl workspace), for those whose last dependent went while no replica was there to see it; 0: never")
	fs.Var((*process.List)(&o.SkipProtectionGroups), "skip-protection-groups", "comma-separated groups whose members may delete with the "+v1alpha1.SkipProtectionAnnotation+" annotation; for others it is ignored (default: anyone may)")
}
