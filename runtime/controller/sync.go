package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// Syncer keeps webhook configurations and rule statuses in line with the
// rules. Every run recomputes the whole desired state from a fresh read of
// all rules, so nothing depends on having seen each change: a rule deleted
// while the controller was down, or a configuration edited by hand, is
// corrected on the next run.
type Syncer struct {
	VW       *process.VirtualWorkspaces
	Resolve  ResolveFunc
	Settings func() WebhookSettings
	Log      logr.Logger
	// Period is how often a run happens without any trigger, which bounds
	// how long hand-made drift can last when no watch event announces it.
	Period time.Duration
	// Propagation is how long a webhook configuration change takes to be
	// applied by every shard: kcp reads a provider workspace's webhook
	// configurations through its informers and, for consumers on other
	// shards, through the cache server. A rule is reported Ready only once
	// the entries it needs are at least this old, so that Ready means a
	// delete is really checked.
	Propagation time.Duration
	// Reread is how soon a run follows one that could not read what some
	// rule needs, whatever else starts runs: once the read works again
	// (a grant restored), the rule is checked and repaired within this,
	// not at the next periodic run.
	Reread time.Duration

	// written records, per logical cluster, when this process added each
	// resource to the cluster's configuration. It only delays readiness;
	// the desired state itself is always recomputed from scratch.
	written map[string]map[schema.GroupVersionResource]time.Time
	// exports keeps what exports serve between runs; lastExports are those
	// the last run read, which the next reads at once before planning.
	exports     process.ExportCache
	lastExports []exportKey
	// stampsSeen is when each type's current stamp was first computed:
	// a new stamp is published once it has stood for stampHold.
	stampsSeen map[schema.GroupResource]stampSeen
	// bridgedAt is when each rule (by key) was last held back for a
	// bridge (RulePlan.Bridged): it stays held for Propagation after,
	// while every shard applies the configuration that ends it.
	bridgedAt map[string]time.Time
	// rules is every rule, from the APIExport provider's cache of each
	// shard; decoded keeps them decoded.
	rules   *process.Cached
	decoded decodedRules
	// bindings, configs and indexes are what else a run reads: the
	// APIBindings of the export, and both kinds of webhook configuration,
	// from the same caches. A change of any starts a run. A view may lag a
	// run's own writes by an event; the writes retry against what the
	// server holds (writeListed).
	bindings, configs, indexes *process.Cached

	// eventWriters bounds how many Events of status changes are written
	// at once, behind the runs that started them, so that they leave the
	// client's rate limit to the runs.
	eventWriters chan struct{}

	// queue is the reconciler's, once it has started (Trigger).
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[planKey]]
	// generations holds a rule's new generation back from Ready until
	// every webhook replica decides writes on it.
	generations generationHold
	// leading: this replica runs the syncs; synced: a run since put every
	// configuration the rules want in place (ReadyCheck).
	leading, synced atomic.Bool
	// unread is what the last run could not read, by rule (ReadyCheck).
	unread atomic.Pointer[unreadRules]
}

// DefaultPropagation is the default of Syncer.Propagation: how long a new
// entry may take to be enforced for a consumer on another shard than the
// protected workspace (it reaches that shard through the cache server).
// It is an order of magnitude above what the benchmarks guide measures
// for that (Convergence); --webhook-propagation-delay raises it where
// shards lag more.
const DefaultPropagation = 2 * time.Second

// NewSyncer returns a Syncer; Follow and SetupWithManager run it.
func NewSyncer(vw *process.VirtualWorkspaces, resolve ResolveFunc, settings func() WebhookSettings, log logr.Logger) *Syncer {
	return &Syncer{VW: vw, Resolve: resolve, Settings: settings, Log: log, Period: time.Minute, Propagation: DefaultPropagation, Reread: DefaultReread,
		written: map[string]map[schema.GroupVersionResource]time.Time{}, decoded: decodedRules{}, eventWriters: make(chan struct{}, 2)}
}

// Follow has shards keep what a run reads in the cache of each shard, and
// a change of it start a run. Call it before the provider starts.
func (s *Syncer) Follow(shards *process.Shards) error {
	follow := func(c *process.Cached) (*process.Cached, error) {
		c.Changed = s.Trigger
		return shards.Follow(c)
	}
	var errs [4]error
	s.rules, errs[0] = follow(&process.Cached{GVR: v1alpha1.GroupVersionResource, Relevant: ruleChanged})
	s.bindings, errs[1] = follow(&process.Cached{GVR: process.APIBindingsGVR})
	s.configs, errs[2] = follow(&process.Cached{GVR: process.WebhookConfigurationsGVR})
	s.indexes, errs[3] = follow(&process.Cached{GVR: process.MutatingWebhookConfigurationsGVR})
	return errors.Join(errs[:]...)
}

// planKey is the one request of the reconciler: every run plans every rule
// of every workspace from scratch, whatever started it.
type planKey struct{}

// settleBurst is how long a run waits after the change that asked for it,
// so that a burst of events (a rule applied with others) starts one run.
const settleBurst = 50 * time.Millisecond

// SetupWithManager adds the reconciler to mgr: it runs on the elected
// replica only, at once, after every change Follow reports, every Period,
// and after a failure with backoff (1 s doubling to 30 s).
func (s *Syncer) SetupWithManager(mgr manager.Manager) error {
	c, err := controller.NewTyped("configurations", mgr, controller.TypedOptions[planKey]{
		Reconciler:              reconcile.TypedFunc[planKey](s.reconcile),
		MaxConcurrentReconciles: 1,
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[planKey](time.Second, 30*time.Second),
	})
	if err != nil {
		return fmt.Errorf("building the configurations reconciler: %w", err)
	}
	if err := c.Watch(source.TypedFunc[planKey](func(_ context.Context, q workqueue.TypedRateLimitingInterface[planKey]) error {
		// The reconciler starts on the elected replica only.
		s.leading.Store(true)
		s.queue.Store(&q)
		q.Add(planKey{})
		return nil
	})); err != nil {
		return fmt.Errorf("starting runs of the configurations reconciler: %w", err)
	}
	// An event a watch missed is made up for within a period: a correction
	// starts a run (Changed). On the elected replica only (a RunnableFunc
	// needs leader election), where the caches run.
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		process.KeepVerified(ctx, s.Period, s.Log, s.rules, s.bindings, s.configs, s.indexes)
		return nil
	}))
}

// Trigger asks for a run soon. Triggers that arrive while a run is pending
// collapse into one.
func (s *Syncer) Trigger() {
	if q := s.queue.Load(); q != nil {
		(*q).AddAfter(planKey{}, settleBurst)
	}
}

// reconcile runs once, and asks for the next run within Period.
func (s *Syncer) reconcile(ctx context.Context, _ planKey) (reconcile.Result, error) {
	start := time.Now()
	phases, err := s.sync(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("sync failed: %w", err)
	}
	s.Log.V(1).Info("synced", append([]any{"duration", time.Since(start)}, phases.spent...)...)
	return reconcile.Result{RequeueAfter: s.Period}, nil
}

// Sync runs once.
func (s *Syncer) Sync(ctx context.Context) error {
	_, err := s.sync(ctx)
	return err
}

// sync runs once and says how long each phase took.
func (s *Syncer) sync(ctx context.Context) (*phaseTimer, error) {
	phases := newPhaseTimer()
	urls, err := s.VW.URLs(ctx)
	if err != nil {
		return phases, err
	}
	ruleObjs, err := s.rules.List(ctx, urls)
	if err != nil {
		return phases, err
	}
	s.decoded.keep(ruleObjs)
	// The three views do not depend on each other: read them at once (a
	// new shard's initial lists are waited for together).
	var bindingObjs, configObjs, indexObjs []process.ShardObject
	var bindingErr, configErr, indexListErr error
	var reads sync.WaitGroup
	reads.Go(func() { bindingObjs, bindingErr = s.bindings.List(ctx, urls) })
	reads.Go(func() { configObjs, configErr = s.configs.List(ctx, urls) })
	reads.Go(func() { indexObjs, indexListErr = s.indexes.List(ctx, urls) })
	reads.Wait()
	if err := errors.Join(bindingErr, configErr); err != nil {
		return phases, err
	}
	// Protection does not need the index: a failure to list the index
	// configurations only keeps stale ones from being removed this run.
	if indexListErr != nil {
		s.Log.Error(indexListErr, "listing reference index configurations; not removing any this run")
	}
	phases.done(phaseRead)

	rules := make([]RuleInput, 0, len(ruleObjs))
	for _, o := range ruleObjs {
		rules = append(rules, s.decoded.get(o).input)
	}
	bindings := map[string]Binding{}
	for _, o := range bindingObjs {
		bindings[o.Cluster] = Binding{
			URL:                o.URL,
			ClaimAccepted:      claimAccepted(o.Obj, process.WebhookConfigurationsGVR.GroupResource()),
			EventsAccepted:     claimAccepted(o.Obj, process.EventsClaim),
			IndexClaimAccepted: claimAccepted(o.Obj, process.MutatingWebhookConfigurationsGVR.GroupResource()),
			TypesClaimAccepted: claimAccepted(o.Obj, process.APIExportsGVR.GroupResource()) && claimAccepted(o.Obj, process.APIResourceSchemasGVR.GroupResource()),
		}
	}
	exports := &exportReader{client: s.VW.Client, bindings: bindings, seen: map[exportKey]exportResult{}, cache: &s.exports}
	exports.prefetch(ctx, s.lastExports)
	settings := s.Settings()
	plan := ComputePlan(ctx, rules, bindings, s.Resolve, exports.read)
	plan.KeepInstalled(installedProtection(configObjs, settings.ConfigurationName), bindings)
	s.lastExports = exports.keys()
	s.noteUnread(plan)
	var protecting map[schema.GroupResource][]settle.Protecting
	if indexListErr == nil {
		// Without the index configurations nothing is known intact, and
		// no resource gets a stamp.
		plan.Stamps, protecting = planStamps(rules, liveIndexEpochs(indexObjs))
	}
	if settings.Settle {
		if s.stampsSeen == nil {
			s.stampsSeen = map[schema.GroupResource]stampSeen{}
		}
		planned := maps.Clone(plan.Stamps)
		pubs := publishedStamps(configObjs, settings.ConfigurationName)
		published := currentStamps(pubs)
		if wait := holdStamps(plan.Stamps, published, s.stampsSeen, time.Now()); wait > 0 {
			time.AfterFunc(wait, s.Trigger)
		}
		s.confirmStamps(ctx, plan, published, urls, ruleObjs)
		plan.Publications = publish(plan.Stamps, planned, protecting, pubs)
		if wait := s.holdBridged(plan, rules, protecting, configObjs, settings.ConfigurationName, time.Now()); wait > 0 {
			time.AfterFunc(wait, s.Trigger)
		}
	}
	phases.done(phasePlan)

	for cluster := range s.written {
		if _, ok := plan.Webhooks[cluster]; !ok {
			delete(s.written, cluster)
		}
	}
	// The webhook and index configurations do not depend on each other:
	// write both at once.
	var installErrs map[string]error
	var indexes indexSync
	var removeErr, indexErr error
	var installs sync.WaitGroup
	installs.Go(func() { installErrs, removeErr = s.installWebhooks(ctx, plan, bindings, settings, configObjs) })
	installs.Go(func() {
		indexes, indexErr = s.syncIndexes(ctx, plan, bindings, settings, indexObjs, indexListErr == nil)
	})
	installs.Wait()
	now := time.Now()
	errs := []error{removeErr, indexErr, indexListErr}
	phases.done(phaseInstall)
	if len(installErrs) == 0 && indexErr == nil {
		// Every configuration the rules want is in place: what readiness
		// means (ReadyCheck). Failures to read exports or write statuses
		// do not change that.
		s.synced.Store(true)
	}
	// A failure to read an export leaves the verdicts as they were; the
	// run is retried.
	errs = append(errs, exports.errs...)
	var writes []statusWrite
	for _, o := range ruleObjs {
		key := o.Cluster + "/" + o.Obj.GetName()
		rp := plan.Rules[key]
		for _, t := range rp.Targets {
			if err := installErrs[t]; err != nil && rp.Installed.OK {
				rp.Installed = Outcome{Reason: "InstallFailed", Message: fmt.Sprintf("installing the webhook configuration in logical cluster %s: %v", t, err)}
			}
		}
		settleIndex(rp, indexes)
		decoded := s.decoded.get(o)
		if wait := s.holdForPropagation(rp, decoded.input, now); wait > 0 {
			time.AfterFunc(wait, s.Trigger)
		}
		writes = append(writes, statusWrite{o: o, decoded: decoded, plan: rp, eventsAccepted: bindings[o.Cluster].EventsAccepted})
	}
	errs = append(errs, s.writeStatuses(ctx, writes))
	phases.done(phaseStatus)
	for cluster, err := range installErrs {
		errs = append(errs, fmt.Errorf("installing webhook configuration in %s: %w", cluster, err))
	}
	return phases, errors.Join(errs...)
}

// installWebhooks puts the webhook configuration every protected workspace
// needs in place and removes those no rule wants any more, several clusters
// at a time. It returns the failures to install by logical cluster, and
// those to remove.
func (s *Syncer) installWebhooks(ctx context.Context, plan *Plan, bindings map[string]Binding, settings WebhookSettings, configObjs []process.ShardObject) (map[string]error, error) {
	configs := byCluster(configObjs, settings.ConfigurationName)
	jobs := configJobs(plan.Webhooks, configObjs, settings.ConfigurationName)
	errs := make([]error, len(jobs))
	var mu sync.Mutex
	concurrently(len(jobs), func(i int) {
		j := jobs[i]
		if j.stale != nil {
			errs[i] = s.deleteConfiguration(ctx, process.WebhookConfigurationsGVR, *j.stale, "removed webhook configuration: no rule protects this workspace any more")
			return
		}
		added, err := s.ensureConfiguration(ctx, bindings[j.cluster].URL, j.cluster, configs[j.cluster], DesiredScopedWebhookConfiguration(settings, plan.Protected(j.cluster), plan.Publications))
		if err != nil {
			errs[i] = err
			s.Log.Error(err, "installing webhook configuration", "cluster", j.cluster)
		}
		// Propagation counts from when the write was answered.
		written := time.Now()
		mu.Lock()
		s.recordWritten(j.cluster, j.gvrs, added, written)
		mu.Unlock()
	})
	failed := map[string]error{}
	var removeErrs []error
	for i, err := range errs {
		switch {
		case err == nil:
		case jobs[i].stale != nil:
			removeErrs = append(removeErrs, err)
		default:
			failed[jobs[i].cluster] = err
		}
	}
	return failed, errors.Join(removeErrs...)
}

// byCluster returns the objects called name by logical cluster.
func byCluster(objs []process.ShardObject, name string) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.Obj.GetName() == name {
			out[o.Cluster] = o.Obj
		}
	}
	return out
}

// ensureConfiguration makes the cluster's configuration, current as this
// run listed it (nil: none), match desired and returns the resources it
// newly added (all of them when it created it). One changed or created
// since the list is read again and written once more.
func (s *Syncer) ensureConfiguration(ctx context.Context, url, cluster string, current *unstructured.Unstructured, desired *admissionregistrationv1.ValidatingWebhookConfiguration) (map[schema.GroupVersionResource]bool, error) {
	c, err := s.VW.Client(url, cluster)
	if err != nil {
		return nil, err
	}
	res := c.Resource(process.WebhookConfigurationsGVR)
	return writeListed(ctx, res, desired.Name, current, func(current *unstructured.Unstructured) (map[schema.GroupVersionResource]bool, error) {
		return s.ensureConfigurationIn(ctx, res, cluster, current, desired)
	})
}

// ensureConfigurationIn is ensureConfiguration with res, the cluster's
// configurations.
func (s *Syncer) ensureConfigurationIn(ctx context.Context, res dynamic.ResourceInterface, cluster string, current *unstructured.Unstructured, desired *admissionregistrationv1.ValidatingWebhookConfiguration) (map[schema.GroupVersionResource]bool, error) {
	if current == nil {
		u, err := toUnstructured(desired, "ValidatingWebhookConfiguration")
		if err != nil {
			return nil, err
		}
		_, err = res.Create(ctx, u, metav1.CreateOptions{FieldManager: "depctrl-controller"})
		if err != nil {
			return nil, err
		}
		s.Log.Info("installed webhook configuration", "cluster", cluster, "resources", len(coveredResources(desired)))
		return coveredResources(desired), nil
	}
	existing := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, existing); err != nil {
		return nil, fmt.Errorf("decoding webhook configuration: %w", err)
	}
	if !WebhookConfigurationDrifted(existing, desired) {
		return nil, nil
	}
	// Entries that were there already, with the same target, keep being
	// enforced during the update; everything else is new.
	before := map[schema.GroupVersionResource]bool{}
	if !webhookTargetChanged(existing, desired) {
		before = coveredResources(existing)
	}
	ApplyOwnedFields(existing, desired)
	u, err := toUnstructured(existing, "ValidatingWebhookConfiguration")
	if err != nil {
		return nil, err
	}
	if _, err := res.Update(ctx, u, metav1.UpdateOptions{FieldManager: "depctrl-controller"}); err != nil {
		return nil, err
	}
	s.Log.Info("updated webhook configuration", "cluster", cluster, "resources", len(coveredResources(desired)))
	added := map[schema.GroupVersionResource]bool{}
	for gvr := range coveredResources(desired) {
		if !before[gvr] {
			added[gvr] = true
		}
	}
	return added, nil
}

// recordWritten remembers when resources were added to cluster's
// configuration and forgets resources it no longer holds.
func (s *Syncer) recordWritten(cluster string, desired []schema.GroupVersionResource, added map[schema.GroupVersionResource]bool, now time.Time) {
	m := s.written[cluster]
	if m == nil {
		m = map[schema.GroupVersionResource]time.Time{}
		s.written[cluster] = m
	}
	keep := map[schema.GroupVersionResource]bool{}
	for _, g := range desired {
		keep[g] = true
	}
	for g := range m {
		if !keep[g] {
			delete(m, g)
		}
	}
	for g := range added {
		m[g] = now
	}
}

// holdForPropagation reports a rule whose entries are installed but may not
// have reached every shard yet as Propagating, and returns how long until
// they have (0 when they have). The message names the delay, not the time
// left: a message that changed from one run to the next would rewrite the
// rule's status on every run while it propagates.
func (s *Syncer) holdForPropagation(rp *RulePlan, rule RuleInput, now time.Time) time.Duration {
	wait := s.propagating(rp.Targets, rule, now)
	if wait <= 0 || !rp.Installed.OK {
		return 0
	}
	rp.Installed = Outcome{Reason: "Propagating", Message: fmt.Sprintf("webhook configuration written; waiting until every shard applies it (%s after the write)", s.Propagation)}
	return wait
}

// propagating returns how much longer the configuration entries a rule
// needs may take to reach every shard, or 0 when they are settled.
func (s *Syncer) propagating(targets []string, rule RuleInput, now time.Time) time.Duration {
	var wait time.Duration
	for _, t := range targets {
		for _, d := range rule.Dependencies {
			if at, ok := s.written[t][d.GVR]; ok {
				if left := s.Propagation - now.Sub(at); left > wait {
					wait = left
				}
			}
		}
	}
	return wait
}

// deleteConfiguration deletes the webhook configuration o of resource gvr,
// and only the very object that was read, then logs done.
func (s *Syncer) deleteConfiguration(ctx context.Context, gvr schema.GroupVersionResource, o process.ShardObject, done string) error {
	c, err := s.VW.Client(o.URL, o.Cluster)
	if err != nil {
		return err
	}
	err = c.Resource(gvr).Delete(ctx, o.Obj.GetName(), metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: ptrUID(o.Obj)},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s %s in %s: %w", gvr.Resource, o.Obj.GetName(), o.Cluster, err)
	}
	s.Log.Info(done, "cluster", o.Cluster)
	return nil
}

// toUnstructured converts a webhook configuration of the given kind.
func toUnstructured(obj runtime.Object, kind string) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind(kind))
	return u, nil
}

// claimAccepted reports whether an APIBinding accepted the export's claim
// on gr.
func claimAccepted(binding *unstructured.Unstructured, gr schema.GroupResource) bool {
	claims, _, _ := unstructured.NestedSlice(binding.Object, "spec", "permissionClaims")
	for _, c := range claims {
		m, ok := c.(map[string]interface{})
		if !ok {
			continue
		}
		group, _ := m["group"].(string) // absent for the core group
		if group == gr.Group && m["resource"] == gr.Resource && m["state"] == "Accepted" {
			return true
		}
	}
	return false
}
