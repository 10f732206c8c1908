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

// Replayer tries a deferred deletion again: when one of the object's
// dependents is deleted (the reference index tells it, DependentDeleted),
// right after the deletion was deferred (Deferred), and on a sweep over the
// objects that carry the record, which finds those whose triggers a restart
// lost.
type Replayer struct {
	Store DeferralStore
	// Ledger holds the webhook's own record of each deferred deletion:
	// only a deletion it holds is carried out, and its entries are what
	// the resync tries.
	Ledger DeferralLedger
	// OptIn tells whether the object still asks for deferral (the
	// Validator's Defers): opting out after a deferral cancels it.
	OptIn interface {
		Defers(ctx context.Context, cluster string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta) (bool, error)
	}
	Log logr.Logger
	// Prover, when set, tells first whether a stored dependent still
	// references the object (the Validator's own lookup, in process):
	// most tries during a teardown find one, and then cost neither an
	// access review nor a DELETE.
	Prover settle.Prover
	// Resync is how often every entry of the ledger is tried; 0 never.
	Resync time.Duration
	// Workers is how many deletions are tried at once.
	Workers int
	// GoneWithin bounds how long a deleted dependent may take to be gone
	// (finalizers, a slow store) before its targets are tried anyway;
	// Poll is how often it is read at first, doubling up to a second.
	GoneWithin, Poll time.Duration

	queue    workqueue.TypedRateLimitingInterface[replayKey]
	waiting  chan dependentGone
	instance string
	waits    *waitBook
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
	// maxWaitingAtOnce bounds those read and waited on at once, and
	// maxWaitingPerWorkspace those of one workspace, so that one tenant
	// deleting dependents that stay (refused by a policy of its own, or
	// finalizers) cannot hold the others' deferred deletions up.
	maxWaitingAtOnce       = 64
	maxWaitingPerWorkspace = 8
	// maxTargetsPerDependent bounds the objects one deleted dependent has
	// tried: a dependent may reference thousands.
	maxTargetsPerDependent = 64
)

// NewReplayer returns a replayer that deletes through store what ledger
// holds.
func NewReplayer(store DeferralStore, ledger DeferralLedger, log logr.Logger) *Replayer {
	return &Replayer{
		Store: store, Ledger: ledger, Log: log, Resync: DefaultReplayResync, Workers: defaultReplayWorkers,
		GoneWithin: defaultGoneWithin, Poll: defaultGonePoll,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[replayKey](),
			workqueue.TypedRateLimitingQueueConfig[replayKey]{Name: "deferred-deletions"}),
		waiting:  make(chan dependentGone, maxWaiting),
		instance: process.EventInstance("depctrl-webhook"),
		waits:    newWaitBook(),
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
	for _, t := range targets[:min(len(targets), maxTargetsPerDependent)] {
		g.targets = append(g.targets, replayKey{cluster: cluster, gvr: t.Resource, namespace: meta.Namespace, name: t.Name})
	}
	if len(g.targets) == 0 || !r.waits.queue(g.pending()) {
		return
	}
	select {
	case r.waiting <- g:
	default:
		r.waits.unqueue(g.pending())
		r.Log.Info("too many deleted dependents waited on; the sweep tries their targets", "cluster", cluster, "name", meta.Name)
	}
}

// pending names g for the waitBook.
func (g dependentGone) pending() pendingDependent {
	return pendingDependent{cluster: g.cluster, gvr: g.gvr, namespace: g.meta.Namespace, name: g.meta.Name, uid: g.meta.UID}
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
	if r.Resync > 0 {
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
		// A workspace beyond its share takes no slot: the others' waits
		// never queue behind it.
		if !r.waits.start(g.pending()) {
			r.Log.V(1).Info("too many deleted dependents waited on in the workspace; the resync tries their targets", "cluster", g.cluster, "name", g.meta.Name)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		go func() {
			defer func() { <-slots }()
			defer r.waits.end(g.pending())
			var deferred []replayKey
			for _, t := range g.targets {
				if r.deferred(ctx, &t) {
					deferred = append(deferred, t)
				}
			}
			if len(deferred) == 0 {
				return
			}
			r.waitGone(ctx, g)
			for _, t := range deferred {
				r.queue.Add(t)
			}
		}()
	}
}

// waitGone reads the deleted dependent until it is gone, or its deadline
// passes, each read twice as long after the last as the one before, up to
// a second.
func (r *Replayer) waitGone(ctx context.Context, g dependentGone) {
	deletionShows(ctx, g.deadline, r.Poll, time.Second, func(ctx context.Context) (deletionState, error) {
		obj, found, err := r.Store.Meta(ctx, g.cluster, g.gvr, g.meta.Namespace, g.meta.Name)
		if err != nil {
			return stillThere, err
		}
		// By UID alone: the dependent's deletion may be tried again on a
		// later revision, and its targets wait for that too.
		return stateOf(obj.ObjectMeta, found, metav1.ObjectMeta{UID: g.meta.UID}), nil
	})
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

// replay tries the deferred deletion of the object k names, in this order:
//   - only a record the ledger holds counts: one the webhook did not write
//     is removed, with a Warning Event, and nothing is deleted;
//   - a record of another object of the name (another UID), or of an
//     object that no longer asks for deferral (defers), or whose user may
//     no longer delete the object (a SubjectAccessReview), is removed, with
//     an Event;
//   - while the webhook's own lookup finds a stored dependent, nothing is
//     sent: the next dependent's deletion is the next try;
//   - the DELETE, with the UID and the revision read as preconditions, so
//     that a record removed meanwhile (cancelled) or anything written since
//     makes it fail and be tried again, is decided by the webhook like any
//     other.
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
	entry := LedgerEntry{Cluster: k.cluster, Resource: k.gvr, Namespace: meta.Namespace, Name: meta.Name, Record: value}
	drop := func(why string, typ string) error {
		log.Info("deferred deletion dropped: " + why)
		deferredDeletions.WithLabelValues(deferralDropped, k.gvr.GroupResource().String()).Inc()
		r.event(ctx, k, obj, typ, fmt.Sprintf("deferred deletion asked by %s dropped: %s", rec.User, why))
		if err := r.Store.ClearDeferral(ctx, k.cluster, k.gvr, meta, value); err != nil {
			return err
		}
		return r.Ledger.Remove(ctx, entry)
	}
	held, err := r.Ledger.Holds(ctx, entry)
	if err != nil {
		return err
	}
	if !held {
		return drop("the webhook did not record it", process.EventWarning)
	}
	if rec.UID != meta.UID {
		return drop("it was recorded for another object of the name", process.EventNormal)
	}
	if r.OptIn != nil {
		defers, err := r.OptIn.Defers(ctx, k.cluster, k.gvr, meta)
		if err != nil {
			return err
		}
		if !defers {
			return drop("the object, its namespace and the rules over it no longer ask for deferred deletion", process.EventNormal)
		}
	}
	if r.Prover != nil {
		free, err := r.Prover.Unreferenced(ctx, k.cluster, meta.Namespace, k.gvr, []string{meta.Name})
		if err != nil {
			return err
		}
		if !free[meta.Name] {
			return nil
		}
	}
	may, err := r.Store.MayDelete(ctx, k.cluster, k.gvr, meta.Namespace, meta.Name, rec)
	if err != nil {
		return err
	}
	if !may {
		return drop(fmt.Sprintf("%s may no longer %s it", rec.User, rec.VerbOrDelete()), process.EventWarning)
	}
	err = r.Store.DeleteDeferred(ctx, k.cluster, k.gvr, meta, rec)
	switch {
	case err == nil:
		log.Info("deferred deletion carried out", "deferredAt", rec.At.UTC().Format(time.RFC3339))
		deferredDeletions.WithLabelValues(deferralCarriedOut, k.gvr.GroupResource().String()).Inc()
		r.event(ctx, k, obj, process.EventNormal, fmt.Sprintf("deleted, as %s asked at %s: nothing references it any more",
			rec.User, rec.At.UTC().Format(time.RFC3339)))
		return r.Ledger.Remove(ctx, entry)
	case apierrors.IsNotFound(err):
		return r.Ledger.Remove(ctx, entry)
	case apierrors.IsConflict(err):
		// Written since it was read (a record removed, an intent, a
		// label), or replaced: the next try reads it again.
		return errInFlight
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
		return fmt.Errorf("the webhook may not delete it (grant delete on its type: depctrl_shard deferred_deletion, with the type in protected_resources): %w", err)
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
	ev := deletionEvent(process.Regarding{APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: meta.Namespace, Name: meta.Name, UID: string(meta.UID)},
		typ, v1alpha1.ReplayedReason, note, r.instance)
	if err := r.Store.CreateEvent(ctx, k.cluster, ev); err != nil {
		r.Log.Error(err, "recording the deferred deletion's Event", "cluster", k.cluster, "name", meta.Name)
	}
}

// ledgerGrace is how long after it was made an entry of the ledger that
// its object does not carry is kept by the sweep: a deferral is written to
// the ledger first and then to the object, within one admission request.
const ledgerGrace = time.Minute

// recordedWithin reports whether record was made less than grace before
// now (a record that does not parse was not).
func recordedWithin(record string, now time.Time, grace time.Duration) bool {
	rec, err := v1alpha1.ParseDeferredDeletion(record)
	return err == nil && now.Sub(rec.At.Time) < grace
}

// sweepEvery sweeps once a Resync, the first time at once.
func (r *Replayer) sweepEvery(ctx context.Context) {
	t := time.NewTicker(r.Resync)
	defer t.Stop()
	for {
		if err := r.sweep(ctx); err != nil && ctx.Err() == nil {
			r.Log.Error(err, "the resync of deferred deletions failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep tries every deferred deletion the ledger holds, and forgets the
// entries whose object is gone or no longer carries their record (a
// deletion carried out by others, or cancelled).
func (r *Replayer) sweep(ctx context.Context) error {
	entries, err := r.Ledger.List(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		obj, found, err := r.Store.Meta(ctx, e.Cluster, e.Resource, e.Namespace, e.Name)
		if err != nil {
			r.Log.V(1).Info("reading a deferred object failed", "cluster", e.Cluster, "name", e.Name, "error", err.Error())
			continue
		}
		if !found || obj.Annotations[v1alpha1.DeletionDeferredAnnotation] != e.Record {
			if found && recordedWithin(e.Record, time.Now(), ledgerGrace) {
				// Written to the ledger first, and to the object
				// a moment later: being recorded, not cancelled.
				continue
			}
			if err := r.Ledger.Remove(ctx, e); err != nil {
				r.Log.Error(err, "forgetting a deferred deletion")
			}
			continue
		}
		r.queue.Add(replayKey{cluster: e.Cluster, gvr: e.Resource, namespace: e.Namespace, name: e.Name})
	}
	return nil
}
