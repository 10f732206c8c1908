package decision

// Deferred deletion, as the webhook carries it out: the Replayer deletes an
// object whose deletion was deferred once nothing references it. It only
// asks: the DELETE it sends is decided by the webhook like any other, so a
// dependent still there refuses it, and the record waits for the next try.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// DeferredSweep finds the objects that carry a deferred deletion, in every
// workspace that serves a protected type. WorkspaceWalk implements it.
type DeferredSweep interface {
	Walk(ctx context.Context, visit func(cluster string)) error
	Served(ctx context.Context, cluster string, targets []schema.GroupVersionResource) (map[schema.GroupVersionResource]bool, error)
	// Labelled lists the metadata of the objects of gvr in cluster, in
	// every namespace, that carry the label selector selects.
	Labelled(ctx context.Context, cluster string, gvr schema.GroupVersionResource, selector string) ([]metav1.ObjectMeta, error)
}

// Replayer tries a deferred deletion again: when one of the object's
// dependents is deleted (the reference index tells it, DependentDeleted),
// right after the deletion was deferred (Deferred), and on a sweep over the
// objects that carry the record, which finds those whose triggers a restart
// lost.
type Replayer struct {
	Store DeferralStore
	Log   logr.Logger
	// Prover, when set, tells first whether a stored dependent still
	// references the object (the Validator's own lookup, in process):
	// most tries during a teardown find one, and then cost neither an
	// access review nor a DELETE.
	Prover settle.Prover
	// Sweep and Types, when set, find the deferred objects every Resync.
	Sweep DeferredSweep
	Types interface {
		Targets() []schema.GroupVersionResource
	}
	Resync time.Duration
	// Workers is how many deletions are tried at once.
	Workers int
	// GoneWithin bounds how long a deleted dependent may take to be gone
	// (finalizers, a slow store) before its targets are tried anyway;
	// Poll is how often it is read meanwhile.
	GoneWithin, Poll time.Duration

	queue    workqueue.TypedRateLimitingInterface[replayKey]
	waiting  chan dependentGone
	instance string
}

// replayKey names an object whose deferred deletion is to be tried.
type replayKey struct {
	cluster   string
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

// dependentGone is a deleted dependent whose targets are tried once it is
// gone.
type dependentGone struct {
	cluster  string
	gvr      schema.GroupVersionResource
	meta     metav1.ObjectMeta
	targets  []replayKey
	deadline time.Time
}

// Defaults of a Replayer.
const (
	DefaultReplayResync  = 5 * time.Minute
	defaultReplayWorkers = 16
	defaultGoneWithin    = 30 * time.Second
	defaultGonePoll      = 100 * time.Millisecond
	// maxWaiting bounds the deleted dependents queued to be waited on;
	// beyond it a trigger is dropped, and the sweep finds its targets.
	maxWaiting = 4096
	// maxWaitingAtOnce bounds those read and waited on at once.
	maxWaitingAtOnce = 64
)

// NewReplayer returns a replayer that deletes through store.
func NewReplayer(store DeferralStore, log logr.Logger) *Replayer {
	return &Replayer{
		Store: store, Log: log, Resync: DefaultReplayResync, Workers: defaultReplayWorkers,
		GoneWithin: defaultGoneWithin, Poll: defaultGonePoll,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[replayKey](),
			workqueue.TypedRateLimitingQueueConfig[replayKey]{Name: "deferred-deletions"}),
		waiting:  make(chan dependentGone, maxWaiting),
		instance: process.EventInstance("depctrl-webhook"),
	}
}

// Deferred implements Deferrals: the deletion is tried again in a second,
// and in ten, should its last dependent have gone while it was being
// deferred (its deletion, told before the record was stored, found nothing
// to try).
func (r *Replayer) Deferred(cluster string, gvr schema.GroupVersionResource, namespace, name string) {
	k := replayKey{cluster: cluster, gvr: gvr, namespace: namespace, name: name}
	r.queue.AddAfter(k, time.Second)
	r.queue.AddAfter(k, 10*time.Second)
}

// DependentDeleted implements index.DependentDeletions: once the dependent
// meta names is gone (or being deleted, when it no longer blocks), each
// object it referenced is read, and one whose deletion was deferred is
// tried. A dependent whose deletion is refused, or never shows, lets its
// targets be tried after GoneWithin all the same.
func (r *Replayer) DependentDeleted(cluster string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta, targets []index.Referenced) {
	g := dependentGone{cluster: cluster, gvr: gvr, meta: meta, deadline: time.Now().Add(r.GoneWithin)}
	for _, t := range targets {
		g.targets = append(g.targets, replayKey{cluster: cluster, gvr: t.Resource, namespace: meta.Namespace, name: t.Name})
	}
	if len(g.targets) == 0 {
		return
	}
	select {
	case r.waiting <- g:
	default:
		r.Log.Info("too many deleted dependents waited on; the sweep tries their targets", "cluster", cluster, "name", meta.Name)
	}
}

// Start runs the workers, the waits on deleted dependents and the sweep
// until ctx ends.
func (r *Replayer) Start(ctx context.Context) error {
	defer r.queue.ShutDown()
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	for range max(r.Workers, 1) {
		go r.work(ctx)
	}
	go r.wait(ctx)
	if r.Sweep != nil && r.Types != nil && r.Resync > 0 {
		go r.sweepEvery(ctx)
	}
	<-ctx.Done()
	return nil
}

// wait takes deleted dependents, up to maxWaitingAtOnce at a time, and
// queues the targets of each that carry a deferred deletion once it is
// gone. Most dependents reference nothing deferred: that is read first, so
// only the others are waited on.
func (r *Replayer) wait(ctx context.Context) {
	slots := make(chan struct{}, maxWaitingAtOnce)
	for {
		var g dependentGone
		select {
		case <-ctx.Done():
			return
		case g = <-r.waiting:
		}
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		go func() {
			defer func() { <-slots }()
			var deferred []replayKey
			for _, t := range g.targets {
				if r.deferred(ctx, &t) {
					deferred = append(deferred, t)
				}
			}
			if len(deferred) == 0 {
				return
			}
			deletionShows(ctx, g.deadline, r.Poll, func(ctx context.Context) (deletionState, error) {
				return r.dependentState(ctx, g)
			})
			for _, t := range deferred {
				r.queue.Add(t)
			}
		}()
	}
}

// dependentState reads the deleted dependent: gone, replaced, or being
// deleted shows its deletion.
func (r *Replayer) dependentState(ctx context.Context, g dependentGone) (deletionState, error) {
	obj, found, err := r.Store.Meta(ctx, g.cluster, g.gvr, g.meta.Namespace, g.meta.Name)
	meta := obj.ObjectMeta
	switch {
	case err != nil:
		return stillThere, err
	case !found || meta.UID != g.meta.UID || meta.DeletionTimestamp != nil:
		return deletionShown, nil
	}
	return stillThere, nil
}

// deferred reports whether the object k names carries a deferred deletion
// (read in its namespace, then cluster-wide), and sets k's namespace to
// the object's.
func (r *Replayer) deferred(ctx context.Context, k *replayKey) bool {
	_, _, ok := r.read(ctx, k)
	return ok
}

// read reads the object k names and its record; ok is false when there is
// no such object or it carries no record.
func (r *Replayer) read(ctx context.Context, k *replayKey) (metav1.PartialObjectMetadata, v1alpha1.DeferredDeletion, bool) {
	scopes := []string{k.namespace}
	if k.namespace != "" {
		scopes = append(scopes, "")
	}
	for _, ns := range scopes {
		obj, found, err := r.Store.Meta(ctx, k.cluster, k.gvr, ns, k.name)
		if err != nil || !found {
			continue
		}
		k.namespace = ns
		value, has := obj.Annotations[v1alpha1.DeletionDeferredAnnotation]
		if !has {
			return obj, v1alpha1.DeferredDeletion{}, false
		}
		rec, err := v1alpha1.ParseDeferredDeletion(value)
		return obj, rec, err == nil
	}
	return metav1.PartialObjectMetadata{}, v1alpha1.DeferredDeletion{}, false
}

func (r *Replayer) work(ctx context.Context) {
	for {
		k, shutdown := r.queue.Get()
		if shutdown {
			return
		}
		if err := r.replay(ctx, k); errors.Is(err, errInFlight) {
			r.queue.AddRateLimited(k)
		} else if err != nil {
			r.Log.Error(err, "trying a deferred deletion failed; it is tried again", "cluster", k.cluster, "resource", k.gvr.Resource, "namespace", k.namespace, "name", k.name)
			r.queue.AddRateLimited(k)
		} else {
			r.queue.Forget(k)
		}
		r.queue.Done(k)
	}
}

// replay tries the deferred deletion of the object k names. Refused by the
// webhook (dependents still reference it), it waits for the next trigger.
// A record that is not the object's (another UID), or whose user may no
// longer delete the object, is removed, with an Event.
func (r *Replayer) replay(ctx context.Context, k replayKey) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	obj, rec, ok := r.read(ctx, &k)
	meta := obj.ObjectMeta
	if !ok || meta.DeletionTimestamp != nil {
		return nil
	}
	log := r.Log.WithValues("cluster", k.cluster, "resource", k.gvr.Resource, "namespace", meta.Namespace, "name", meta.Name, "requestedBy", rec.User)
	value := meta.Annotations[v1alpha1.DeletionDeferredAnnotation]
	resource := k.gvr.GroupResource().String()
	if rec.UID != meta.UID {
		log.Info("deferred deletion dropped: it was recorded for another object of the name")
		deferredDeletions.WithLabelValues(deferralDropped, resource).Inc()
		return r.Store.ClearDeferral(ctx, k.cluster, k.gvr, meta, value)
	}
	if r.Prover != nil {
		free, err := r.Prover.Unreferenced(ctx, k.cluster, meta.Namespace, k.gvr, []string{meta.Name})
		if err != nil {
			return err
		}
		if !free[meta.Name] {
			// The next dependent's deletion is the next try.
			return nil
		}
	}
	may, err := r.Store.MayDelete(ctx, k.cluster, k.gvr, meta.Namespace, meta.Name, rec)
	if err != nil {
		return err
	}
	if !may {
		log.Info("deferred deletion dropped: its user may not delete the object now")
		deferredDeletions.WithLabelValues(deferralDropped, resource).Inc()
		r.event(ctx, k, obj, process.EventWarning, fmt.Sprintf("deferred deletion asked by %s dropped: %s may no longer delete it", rec.User, rec.User))
		return r.Store.ClearDeferral(ctx, k.cluster, k.gvr, meta, value)
	}
	err = r.Store.DeleteDeferred(ctx, k.cluster, k.gvr, meta, rec)
	switch {
	case err == nil:
		log.Info("deferred deletion carried out", "deferredAt", rec.At.UTC().Format(time.RFC3339))
		deferredDeletions.WithLabelValues(deferralCarriedOut, resource).Inc()
		r.event(ctx, k, obj, process.EventNormal, fmt.Sprintf("deleted, as %s asked at %s: nothing references it any more",
			rec.User, rec.At.UTC().Format(time.RFC3339)))
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone, or replaced by another object of the name.
		return nil
	case apierrors.IsForbidden(err) && refusedForStored(err):
		// A stored dependent still references it: its deletion, which
		// the reference index tells, is the next try.
		log.V(1).Info("deferred deletion still refused", "reason", err.Error())
		return nil
	case apierrors.IsForbidden(err) && refusedForWrites(err):
		// Only writes on their way (intents) hold it: they are stored,
		// withdrawn or expire without any deletion to tell it, so it is
		// tried again, backing off.
		return errInFlight
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the webhook may not delete it (grant delete on the protected types: depctrl_shard deferred_deletion): %w", err)
	}
	return err
}

// errInFlight asks for another try of a deletion that only writes on their
// way refused.
var errInFlight = errors.New("refused while dependents' writes are on their way")

// refusedForStored reports whether err, the webhook's refusal, names a
// stored dependent, or more dependents than it names.
func refusedForStored(err error) bool {
	for _, c := range causesOf(err) {
		if c.Type == v1alpha1.CauseStoredDependent || c.Type == v1alpha1.CauseMoreDependents {
			return true
		}
	}
	return false
}

// refusedForWrites reports whether err, the webhook's refusal, names only
// dependents whose writes are not stored.
func refusedForWrites(err error) bool {
	causes := causesOf(err)
	for _, c := range causes {
		if c.Type != v1alpha1.CausePendingDependent {
			return false
		}
	}
	return len(causes) > 0
}

func causesOf(err error) []metav1.StatusCause {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	return status.Status().Details.Causes
}

// event records on obj, in its workspace, what became of its deferred
// deletion.
func (r *Replayer) event(ctx context.Context, k replayKey, obj metav1.PartialObjectMetadata, typ, note string) {
	meta := obj.ObjectMeta
	ev := process.Event{
		Regarding:  process.Regarding{APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: meta.Namespace, Name: meta.Name, UID: string(meta.UID)},
		Type:       typ,
		Reason:     v1alpha1.ReplayedReason,
		Action:     "Delete",
		Note:       note,
		Controller: webhookController,
		Instance:   r.instance,
	}
	if err := r.Store.CreateEvent(ctx, k.cluster, ev); err != nil {
		r.Log.Error(err, "recording the deferred deletion's Event", "cluster", k.cluster, "name", meta.Name)
	}
}

// sweepEvery sweeps once a Resync, the first time at once.
func (r *Replayer) sweepEvery(ctx context.Context) {
	t := time.NewTicker(r.Resync)
	defer t.Stop()
	for {
		if err := r.sweep(ctx); err != nil && ctx.Err() == nil {
			r.Log.Error(err, "the sweep for deferred deletions missed some workspaces")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep queues every object that carries a deferred deletion.
func (r *Replayer) sweep(ctx context.Context) error {
	types := r.Types.Targets()
	if len(types) == 0 {
		return nil
	}
	selector := v1alpha1.DeletionDeferredLabel + "=true"
	return r.Sweep.Walk(ctx, func(cluster string) {
		served, _ := r.Sweep.Served(ctx, cluster, types)
		for gvr, ok := range served {
			if !ok {
				continue
			}
			items, err := r.Sweep.Labelled(ctx, cluster, gvr, selector)
			if err != nil {
				r.Log.V(1).Info("listing deferred deletions failed", "cluster", cluster, "resource", gvr.Resource, "error", err.Error())
				continue
			}
			for _, m := range items {
				r.queue.Add(replayKey{cluster: cluster, gvr: gvr, namespace: m.Namespace, name: m.Name})
			}
		}
	})
}
