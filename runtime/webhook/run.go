// Package webhook wires the dependency webhook binary together. Run reads
// the rules (RuleSync), the reference index configurations and the
// published settle stamps from every shard's virtual workspace, through
// watches that retry until the shard serves the export (Follower), and
// serves the protection decision (package decision) and the reference index
// (package index), which refuse a request until RuleSync knows every rule
// that matters to it (admission.Rules). It holds no admission logic of
// its own.
package webhook

import (
	"context"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/decision"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// Run serves admission requests until ctx ends.
func Run(ctx context.Context, o Options, log logr.Logger) error {
	if o.CertDir == "" {
		return fmt.Errorf("--tls-cert-dir is required: a directory with tls.crt and tls.key")
	}
	if err := o.RateLimit.Validate(); err != nil {
		return err
	}
	ws, mgr, err := o.Connect(manager.Options{}, log)
	if err != nil {
		return err
	}

	vw, err := process.NewVirtualWorkspaces(ws.Config, o.ExportName)
	if err != nil {
		return err
	}
	// The provider logs every binding it sees: at V(1).
	shards, err := process.NewShards(vw, mgr.GetScheme(), log.WithName("provider").V(1))
	if err != nil {
		return err
	}
	reg := registry.New()
	rules := NewRuleSync(vw, reg, log.WithName("rules"))
	indexConfigs := &index.Configurations{Registry: reg, Log: log.WithName("index-configurations")}
	rules.IndexConfigs = indexConfigs
	rules.PartialReadyAfter = o.PartialReadyAfter
	published := &settle.PublishedStamps{}
	follower := &Follower{Shards: shards, Log: log.WithName("follow")}
	// The rules and the index configurations are read, at start and after,
	// from the same watches: one deleted before a watch's initial list is
	// in neither.
	ruleWatch, err := follower.Follow("rule-registry", v1alpha1.GroupVersionResource, rules.Observe)
	if err != nil {
		return err
	}
	rules.Shard = ruleWatch.ListShard
	indexWatch, err := follower.Follow("index-configurations", process.MutatingWebhookConfigurationsGVR, indexConfigs.Observe)
	if err != nil {
		return err
	}
	rules.IndexShard = indexWatch.ListShard
	rules.Watches = []WatchHealth{ruleWatch, indexWatch}
	if _, err := follower.Follow("published-stamps", process.WebhookConfigurationsGVR, published.Observe); err != nil {
		return err
	}
	if err := mgr.Add(follower); err != nil {
		return err
	}
	if err := mgr.Add(rules); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("registry", func(*http.Request) error { return rules.Ready() }); err != nil {
		return err
	}

	finder, err := decision.NewFrontProxyFinder(ws.Base)
	if err != nil {
		return err
	}
	finder.IgnoreDeleting = o.IgnoreDeletingDependents
	finder.Schemas = reg
	if o.ListPageSize >= 0 {
		finder.PageSize = o.ListPageSize
	}
	if o.ReindexWorkers > 0 {
		reindexer := index.NewReindexer(finder.RESTClient(), o.ReindexWorkers, log.WithName("reindex"))
		finder.Reindexer = reindexer
		if err := mgr.Add(reindexer); err != nil {
			return err
		}
	}
	self, err := SelfUser(ws.Config)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(ws.Config)
	if err != nil {
		return fmt.Errorf("building a client of the dep-ctrl workspace: %w", err)
	}
	// References to objects that do not exist are marked whether or not
	// this replica settles, or knows yet whether any stamp is published:
	// another replica may settle. A mark costs a write per workspace and
	// type every 20 s at most.
	pending := settle.NewPendingReferences(kube.CoordinationV1(), o.PendingNamespace)
	intentLifetime := o.IntentLifetime
	if intentLifetime == 0 {
		intentLifetime = index.DefaultLifetime
	}
	var settler *settle.Settler
	if o.Settle {
		settler = &settle.Settler{Stamps: reg, Published: published, Objects: finder, Pending: pending, Intents: index.Clock{Lifetime: intentLifetime},
			After: o.SettleAfter, IntentLifetime: intentLifetime, Log: log.WithName("settler")}
		if o.SettleWalkRate > 0 {
			settler.Workspaces = &decision.WorkspaceWalk{Finder: finder, Root: "root", Limit: rate.NewLimiter(rate.Limit(o.SettleWalkRate), 1), Exports: reg.TargetExports}
			settler.Types = reg
		}
	}
	guard := &settle.PublishedGuard{Stamps: reg, Published: published, IndexRead: indexConfigs.Populated,
		RulesRead: func() bool { return rules.Ready() == nil }, SettleAfter: o.SettleAfter, Log: log.WithName("published-stamps")}
	if settler != nil {
		guard.Settled = settler
	}
	if err := mgr.Add(guard); err != nil {
		return err
	}
	opts := decision.ValidatorOptions{
		Self:                 self,
		RequestTimeout:       o.RequestTimeout,
		SkipProtectionGroups: o.SkipProtectionGroups,
		Auditor:              decision.NewEventAuditor(finder, log.WithName("audit")),
		IntentLifetime:       o.IntentLifetime,
		Candidates:           candidates(settler),
	}
	var replayer *decision.Replayer
	if o.DeferredDeletion {
		// The ledger lives beside the marks of pending references, in
		// the dep-ctrl workspace, where no consumer writes.
		ledger := decision.LeaseLedger{Leases: kube.CoordinationV1().Leases(o.PendingNamespace)}
		replayer = decision.NewReplayer(finder, ledger, log.WithName("deferred"))
		replayer.Resync = o.DeferredResync
		opts.Deferral, opts.Ledger, opts.Deferrals = finder, ledger, replayer
		if err := mgr.Add(replayer); err != nil {
			return err
		}
	}
	validator := decision.NewValidator(reg, finder, rules, opts, log.WithName("validator"))
	if replayer != nil {
		replayer.Prover, replayer.OptIn = validator, validator
	}
	if settler != nil {
		settler.Prover = validator
		if err := mgr.Add(settler); err != nil {
			return err
		}
	}
	indexer := index.NewIndexer(reg, rules, log.WithName("indexer"))
	indexer.Dependents = finder
	indexer.Pending = pending
	if replayer != nil {
		indexer.Deletions = replayer
	}
	if o.IntentLifetime > 0 {
		indexer.IntentLifetime = o.IntentLifetime
	}
	if o.RequestTimeout > 0 {
		indexer.RequestTimeout = o.RequestTimeout
	}
	// Writes that reference one popular object record their intents on it
	// together rather than queue on it one patch each.
	indexer.Targets = index.NewGroupCommit(finder, indexer.RequestTimeout)
	if err := mgr.Add(&admission.Server{Addr: o.Addr, CertDir: o.CertDir, Validator: validator,
		Indexer: indexer, Log: log.WithName("server")}); err != nil {
		return err
	}

	// The APIExport provider follows the export's endpoint slice and
	// builds the cache of each shard the informers above live in.
	mc, err := mcmanager.WithMultiCluster(mgr, shards.Provider)
	if err != nil {
		return fmt.Errorf("adding the APIExport provider to the manager: %w", err)
	}
	log.Info("starting webhook", "workspace", ws.Path, "export", o.ExportName, "addr", o.Addr)
	return mc.Start(ctx)
}

// candidates is settler as Candidates, nil when there is none.
func candidates(settler *settle.Settler) decision.Candidates {
	if settler == nil {
		return nil
	}
	return settler
}
