package decision

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// deferredVPC is a stored VPC that carries a deferred deletion recorded for
// recordUID.
func deferredVPC(t *testing.T, store *fakeDeferralStore, name string, uid, recordUID types.UID) v1alpha1.DeferredDeletion {
	t.Helper()
	bg := metav1.DeletePropagationBackground
	rec := v1alpha1.DeferredDeletion{User: "alice", Groups: []string{"team-a"}, At: metav1.NewTime(time.Unix(1000, 0)), UID: recordUID, PropagationPolicy: &bg}
	value, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	store.put(vpcGVR, metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid,
		Annotations: map[string]string{v1alpha1.DeletionDeferredAnnotation: value}, Labels: map[string]string{v1alpha1.DeletionDeferredLabel: "true"}})
	return rec
}

// TestReplay: a deferred deletion is carried out with the recorded UID as
// precondition and the recorded propagation policy, and an Event says so;
// refused by the webhook, it waits, the record kept; a record made for
// another object of the name, or whose user may no longer delete the
// object, is removed and nothing deleted.
func TestReplay(t *testing.T) {
	tests := []struct {
		name        string
		recordUID   types.UID
		deleteErr   error
		mayDelete   bool
		wantDeleted bool
		wantCleared bool
		wantErr     bool
		wantEvent   string
		// referenced: the in-process lookup finds a stored dependent.
		referenced bool
	}{
		{name: "a stored dependent found in process: no review, no DELETE", recordUID: "u1", mayDelete: true, referenced: true},
		{name: "nothing references it any more", recordUID: "u1", mayDelete: true, wantDeleted: true, wantEvent: process.EventNormal},
		{name: "still referenced by a stored dependent: the next dependent deletion is the next try", recordUID: "u1", mayDelete: true, deleteErr: refusal(v1alpha1.CauseStoredDependent, v1alpha1.CausePendingDependent)},
		{name: "more dependents than named count as stored", recordUID: "u1", mayDelete: true, deleteErr: refusal(v1alpha1.CauseMoreDependents)},
		{name: "held only by writes on their way: tried again", recordUID: "u1", mayDelete: true, deleteErr: refusal(v1alpha1.CausePendingDependent), wantErr: true},
		{name: "refused without causes (no delete grant): tried again, said", recordUID: "u1", mayDelete: true, deleteErr: apierrors.NewForbidden(vpcGVR.GroupResource(), "vpc-1", errors.New("cannot delete")), wantErr: true},
		{name: "gone meanwhile", recordUID: "u1", mayDelete: true, deleteErr: apierrors.NewNotFound(vpcGVR.GroupResource(), "vpc-1")},
		{name: "a failure is tried again", recordUID: "u1", mayDelete: true, deleteErr: apierrors.NewServiceUnavailable("shard down"), wantErr: true},
		{name: "a record of another object of the name", recordUID: "u0", mayDelete: true, wantCleared: true},
		{name: "its user may no longer delete it", recordUID: "u1", mayDelete: false, wantCleared: true, wantEvent: process.EventWarning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeDeferralStore()
			store.deleteErr, store.mayDelete = tt.deleteErr, tt.mayDelete
			rec := deferredVPC(t, store, "vpc-1", "u1", tt.recordUID)
			r := NewReplayer(store, logr.Discard())
			r.Prover = proverSaying(!tt.referenced)
			err := r.replay(context.Background(), replayKey{cluster: "consumer-1", gvr: vpcGVR, namespace: "default", name: "vpc-1"})
			if (err != nil) != tt.wantErr {
				t.Fatalf("replay: %v, want an error: %v", err, tt.wantErr)
			}
			deleted, cleared, events := store.snapshot()
			if (len(deleted) == 1) != tt.wantDeleted {
				t.Fatalf("deleted %v, want a deletion: %v", deleted, tt.wantDeleted)
			}
			if tt.wantDeleted {
				got := deleted[0].record
				if got.UID != "u1" || got.PropagationPolicy == nil || *got.PropagationPolicy != *rec.PropagationPolicy {
					t.Errorf("deleted with %+v, want the record's UID and propagation policy", got)
				}
			}
			if (len(cleared) == 1) != tt.wantCleared {
				t.Errorf("cleared %v, want the record removed: %v", cleared, tt.wantCleared)
			}
			if o, ok := store.get(vpcGVR, "default", "vpc-1"); ok && !tt.wantCleared {
				if _, has := o.Annotations[v1alpha1.DeletionDeferredAnnotation]; !has {
					t.Error("the record is gone while the deletion still waits")
				}
			}
			if (len(events) == 1) != (tt.wantEvent != "") || (tt.wantEvent != "" && (events[0].Type != tt.wantEvent || events[0].Reason != v1alpha1.ReplayedReason || events[0].Regarding.Kind != "VPC")) {
				t.Errorf("events %+v, want one of type %q", events, tt.wantEvent)
			}
		})
	}
}

// TestReplayerTriggers: a deferred object is deleted once a deleted
// dependent that referenced it is gone; an object that carries no record is
// never deleted; a deferral just recorded is tried at once; the sweep finds
// a deferred object no trigger named.
func TestReplayerTriggers(t *testing.T) {
	vm := metav1.ObjectMeta{Name: "vm-1", Namespace: "default", UID: "vm-uid"}
	run := func(t *testing.T, store *fakeDeferralStore, sweep DeferredSweep) (*Replayer, context.CancelFunc) {
		r := NewReplayer(store, logr.Discard())
		r.Poll, r.GoneWithin = 5*time.Millisecond, 2*time.Second
		if sweep != nil {
			r.Sweep, r.Types, r.Resync = sweep, typesOf{vpcGVR}, time.Hour
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = r.Start(ctx) }()
		return r, cancel
	}
	deletedOf := func(store *fakeDeferralStore) []string {
		deleted, _, _ := store.snapshot()
		var keys []string
		for _, d := range deleted {
			keys = append(keys, d.key)
		}
		return keys
	}
	waitFor := func(t *testing.T, store *fakeDeferralStore, want int) []string {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if got := deletedOf(store); len(got) >= want {
				return got
			}
			time.Sleep(5 * time.Millisecond)
		}
		return deletedOf(store)
	}

	t.Run("a deleted dependent, once gone, lets its deferred target go", func(t *testing.T) {
		store := newFakeDeferralStore()
		deferredVPC(t, store, "vpc-1", "u1", "u1")
		store.put(vpcGVR, metav1.ObjectMeta{Name: "vpc-2", Namespace: "default", UID: "u2"})
		store.put(vmGVR, vm)
		r, cancel := run(t, store, nil)
		defer cancel()
		r.DependentDeleted("consumer-1", vmGVR, vm, []index.Referenced{{Resource: vpcGVR, Name: "vpc-1"}, {Resource: vpcGVR, Name: "vpc-2"}})
		time.Sleep(50 * time.Millisecond)
		if got := deletedOf(store); len(got) != 0 {
			t.Fatalf("deleted %v while the dependent is still there", got)
		}
		store.mu.Lock()
		delete(store.objects, storeKey(vmGVR, "default", "vm-1"))
		store.mu.Unlock()
		waitFor(t, store, 1)
		time.Sleep(50 * time.Millisecond)
		if got := deletedOf(store); len(got) != 1 || got[0] != storeKey(vpcGVR, "default", "vpc-1") {
			t.Errorf("deleted %v, want only the deferred vpc-1", got)
		}
	})
	t.Run("a deferral just recorded is tried at once", func(t *testing.T) {
		store := newFakeDeferralStore()
		deferredVPC(t, store, "vpc-1", "u1", "u1")
		r, cancel := run(t, store, nil)
		defer cancel()
		r.Deferred("consumer-1", vpcGVR, "default", "vpc-1")
		if got := waitFor(t, store, 1); len(got) != 1 {
			t.Errorf("deleted %v, want vpc-1", got)
		}
	})
	t.Run("the sweep finds a deferred object no trigger named", func(t *testing.T) {
		store := newFakeDeferralStore()
		deferredVPC(t, store, "vpc-1", "u1", "u1")
		_, cancel := run(t, store, fakeSweep{"consumer-1": {{Name: "vpc-1", Namespace: "default"}}})
		defer cancel()
		if got := waitFor(t, store, 1); len(got) != 1 {
			t.Errorf("deleted %v, want vpc-1", got)
		}
	})
}

// proverSaying proves every object unreferenced, or none.
type proverSaying bool

func (p proverSaying) Unreferenced(_ context.Context, _, _ string, _ schema.GroupVersionResource, names []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = bool(p)
	}
	return out, nil
}

// refusal is the webhook's denial of a deletion, with causes of the types
// given.
func refusal(types ...metav1.CauseType) error {
	err := apierrors.NewForbidden(vpcGVR.GroupResource(), "vpc-1", errors.New("still referenced"))
	err.ErrStatus.Details.Causes = nil
	for _, ty := range types {
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: ty})
	}
	return err
}

type typesOf []schema.GroupVersionResource

func (t typesOf) Targets() []schema.GroupVersionResource { return t }

// fakeSweep is workspaces and the labelled objects of each.
type fakeSweep map[string][]metav1.ObjectMeta

func (f fakeSweep) Walk(_ context.Context, visit func(string)) error {
	for c := range f {
		visit(c)
	}
	return nil
}

func (f fakeSweep) Served(_ context.Context, _ string, targets []schema.GroupVersionResource) (map[schema.GroupVersionResource]bool, error) {
	out := map[schema.GroupVersionResource]bool{}
	for _, t := range targets {
		out[t] = true
	}
	return out, nil
}

func (f fakeSweep) Labelled(_ context.Context, cluster string, _ schema.GroupVersionResource, selector string) ([]metav1.ObjectMeta, error) {
	if selector != v1alpha1.DeletionDeferredLabel+"=true" {
		return nil, errors.New("unexpected selector " + selector)
	}
	return f[cluster], nil
}
