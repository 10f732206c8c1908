package decision

import (
	"context"
	"errors"
	"strconv"
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
// recordUID, which ledger holds (when not nil).
func deferredVPC(t *testing.T, store *fakeDeferralStore, ledger *fakeLedger, name string, uid, recordUID types.UID) v1alpha1.DeferredDeletion {
	t.Helper()
	bg := metav1.DeletePropagationBackground
	rec := v1alpha1.DeferredDeletion{User: "alice", Groups: []string{"team-a"}, At: metav1.NewTime(time.Unix(1000, 0)), UID: recordUID, PropagationPolicy: &bg}
	value, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	store.put(vpcGVR, metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid, ResourceVersion: "5",
		Annotations: map[string]string{v1alpha1.DeletionDeferredAnnotation: value}, Labels: map[string]string{v1alpha1.DeletionDeferredLabel: "true"}})
	if ledger != nil {
		_ = ledger.Put(context.Background(), LedgerEntry{Cluster: "consumer-1", Resource: vpcGVR, Namespace: "default", Name: name, Record: value})
	}
	return rec
}

// TestReplay: a deferred deletion is carried out with the recorded UID and
// the revision read as preconditions and the recorded propagation policy,
// an Event says so, and the ledger forgets it; refused by the webhook, it
// waits, the record kept; a record the ledger does not hold (not the
// webhook's), one made for another object of the name, one of an object
// that no longer opts in, or whose user may no longer delete the object,
// is removed and nothing deleted; a record removed while the try is under
// way (cancelled) fails the DELETE's precondition.
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
		// unheld: the ledger does not hold the record; optedOut: the
		// object no longer asks for deferral; cancelled: the record is
		// removed between the read and the DELETE.
		unheld, optedOut, cancelled bool
	}{
		{name: "a stored dependent found in process: no review, no DELETE", recordUID: "u1", mayDelete: true, referenced: true},
		{name: "nothing references it any more", recordUID: "u1", mayDelete: true, wantDeleted: true, wantEvent: process.EventNormal},
		{name: "still referenced by a stored dependent: the next dependent deletion is the next try", recordUID: "u1", mayDelete: true, deleteErr: refusal(v1alpha1.CauseStoredDependent, v1alpha1.CausePendingDependent)},
		{name: "more dependents than named count as stored", recordUID: "u1", mayDelete: true, deleteErr: refusal(v1alpha1.CauseMoreDependents)},
		{name: "held only by writes on their way: tried again", recordUID: "u1", mayDelete: true, deleteErr: refusal(v1alpha1.CausePendingDependent), wantErr: true},
		{name: "refused without causes (no delete grant): tried again, said", recordUID: "u1", mayDelete: true, deleteErr: apierrors.NewForbidden(vpcGVR.GroupResource(), "vpc-1", errors.New("cannot delete")), wantErr: true},
		{name: "gone meanwhile", recordUID: "u1", mayDelete: true, deleteErr: apierrors.NewNotFound(vpcGVR.GroupResource(), "vpc-1")},
		{name: "a failure is tried again", recordUID: "u1", mayDelete: true, deleteErr: apierrors.NewServiceUnavailable("shard down"), wantErr: true},
		{name: "a record the webhook did not write deletes nothing", recordUID: "u1", mayDelete: true, unheld: true, wantCleared: true, wantEvent: process.EventWarning},
		{name: "a record of another object of the name", recordUID: "u0", mayDelete: true, wantCleared: true, wantEvent: process.EventNormal},
		{name: "an object that opted out since", recordUID: "u1", mayDelete: true, optedOut: true, wantCleared: true, wantEvent: process.EventNormal},
		{name: "its user may no longer delete it", recordUID: "u1", mayDelete: false, wantCleared: true, wantEvent: process.EventWarning},
		{name: "cancelled while the try is under way", recordUID: "u1", mayDelete: true, cancelled: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeDeferralStore()
			store.deleteErr, store.mayDelete = tt.deleteErr, tt.mayDelete
			ledger := newFakeLedger()
			held := ledger
			if tt.unheld {
				held = nil
			}
			rec := deferredVPC(t, store, held, "vpc-1", "u1", tt.recordUID)
			r := NewReplayer(store, ledger, logr.Discard())
			r.Prover = proverSaying(!tt.referenced)
			r.OptIn = optInSaying(!tt.optedOut)
			if tt.cancelled {
				// The owner removes the record once the replayer has
				// read it: here, while it looks for dependents.
				r.Prover = cancelling{store: store}
			}
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
				if ledger.size() != 0 {
					t.Error("the ledger still holds a deletion carried out")
				}
			}
			if !tt.cancelled && (len(cleared) == 1) != tt.wantCleared {
				t.Errorf("cleared %v, want the record removed: %v", cleared, tt.wantCleared)
			}
			if tt.wantCleared && ledger.size() != 0 {
				t.Error("the ledger still holds a record removed")
			}
			if o, ok := store.get(vpcGVR, "default", "vpc-1"); ok && !tt.wantCleared && !tt.cancelled {
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

// cancelling is a Prover that proves the object unreferenced and, while
// it does, has its owner remove the deferral.
type cancelling struct{ store *fakeDeferralStore }

func (c cancelling) Unreferenced(ctx context.Context, cluster, _ string, gvr schema.GroupVersionResource, names []string) (map[string]bool, error) {
	o, _ := c.store.get(gvr, "default", names[0])
	_ = c.store.ClearDeferral(ctx, cluster, gvr, o.ObjectMeta, o.Annotations[v1alpha1.DeletionDeferredAnnotation])
	return map[string]bool{names[0]: true}, nil
}

// optInSaying says every object asks for deferral, or none.
type optInSaying bool

func (o optInSaying) Defers(context.Context, string, schema.GroupVersionResource, metav1.ObjectMeta) (bool, error) {
	return bool(o), nil
}

// TestReplayerTriggers: a deferred object is deleted once a deleted
// dependent that referenced it is gone; an object that carries no record is
// never deleted; a deferral just recorded is tried at once; the sweep finds
// a deferred object no trigger named.
func TestReplayerTriggers(t *testing.T) {
	vm := metav1.ObjectMeta{Name: "vm-1", Namespace: "default", UID: "vm-uid"}
	run := func(t *testing.T, store *fakeDeferralStore, ledger *fakeLedger, resync bool) (*Replayer, context.CancelFunc) {
		r := NewReplayer(store, ledger, logr.Discard())
		r.Poll, r.GoneWithin = 5*time.Millisecond, 2*time.Second
		r.Resync = 0
		if resync {
			r.Resync = time.Hour
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
		store, ledger := newFakeDeferralStore(), newFakeLedger()
		deferredVPC(t, store, ledger, "vpc-1", "u1", "u1")
		store.put(vpcGVR, metav1.ObjectMeta{Name: "vpc-2", Namespace: "default", UID: "u2"})
		store.put(vmGVR, vm)
		r, cancel := run(t, store, ledger, false)
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
		store, ledger := newFakeDeferralStore(), newFakeLedger()
		deferredVPC(t, store, ledger, "vpc-1", "u1", "u1")
		r, cancel := run(t, store, ledger, false)
		defer cancel()
		r.Deferred("consumer-1", vpcGVR, "default", "vpc-1")
		if got := waitFor(t, store, 1); len(got) != 1 {
			t.Errorf("deleted %v, want vpc-1", got)
		}
	})
	t.Run("the resync tries what the ledger holds and forgets what is gone or cancelled", func(t *testing.T) {
		store, ledger := newFakeDeferralStore(), newFakeLedger()
		deferredVPC(t, store, ledger, "vpc-1", "u1", "u1")
		_ = ledger.Put(context.Background(), LedgerEntry{Cluster: "consumer-1", Resource: vpcGVR, Namespace: "default", Name: "vpc-gone", Record: "{}"})
		deferredVPC(t, store, ledger, "vpc-cancelled", "u3", "u3")
		o, _ := store.get(vpcGVR, "default", "vpc-cancelled")
		_ = store.ClearDeferral(context.Background(), "consumer-1", vpcGVR, o.ObjectMeta, o.Annotations[v1alpha1.DeletionDeferredAnnotation])
		_, cancel := run(t, store, ledger, true)
		defer cancel()
		if got := waitFor(t, store, 1); len(got) != 1 || got[0] != storeKey(vpcGVR, "default", "vpc-1") {
			t.Errorf("deleted %v, want vpc-1", got)
		}
		deadline := time.Now().Add(5 * time.Second)
		for ledger.size() > 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := ledger.size(); n != 0 {
			t.Errorf("the ledger holds %d entries, want none: one carried out, one gone, one cancelled", n)
		}
	})
	t.Run("the resync keeps a deferral being recorded", func(t *testing.T) {
		// The ledger is written first, the object a moment later: a
		// sweep in between finds the object without the record.
		store, ledger := newFakeDeferralStore(), newFakeLedger()
		store.put(vpcGVR, metav1.ObjectMeta{Name: "vpc-1", Namespace: "default", UID: "u1"})
		value, err := v1alpha1.DeferredDeletion{User: "alice", At: metav1.NewTime(time.Now().Truncate(time.Second)), UID: "u1"}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		e := LedgerEntry{Cluster: "consumer-1", Resource: vpcGVR, Namespace: "default", Name: "vpc-1", Record: value}
		_ = ledger.Put(context.Background(), e)
		r := NewReplayer(store, ledger, logr.Discard())
		if err := r.sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		if held, _ := ledger.Holds(context.Background(), e); !held {
			t.Fatal("the sweep forgot a deferral whose record is on its way to the object")
		}
		o, _ := store.get(vpcGVR, "default", "vpc-1")
		if err := store.RecordDeferral(context.Background(), "consumer-1", vpcGVR, o.ObjectMeta, value); err != nil {
			t.Fatal(err)
		}
		if err := r.sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		if held, _ := ledger.Holds(context.Background(), e); !held {
			t.Fatal("the sweep forgot a deferral recorded on its object")
		}
	})
	t.Run("one workspace's waits do not hold another's up", func(t *testing.T) {
		store, ledger := newFakeDeferralStore(), newFakeLedger()
		for i := range maxWaitingPerWorkspace + 1 {
			name := "vpc-busy-" + strconv.Itoa(i)
			deferredVPC(t, store, ledger, name, types.UID(name), types.UID(name))
			// Dependents that stay: each wait lasts its deadline.
			store.put(vmGVR, metav1.ObjectMeta{Name: "vm-stays-" + strconv.Itoa(i), Namespace: "default", UID: types.UID("vm-stays-" + strconv.Itoa(i))})
		}
		r, cancel := run(t, store, ledger, false)
		defer cancel()
		for i := range maxWaitingPerWorkspace + 1 {
			r.DependentDeleted("busy", vmGVR, metav1.ObjectMeta{Name: "vm-stays-" + strconv.Itoa(i), Namespace: "default", UID: types.UID("vm-stays-" + strconv.Itoa(i))},
				[]index.Referenced{{Resource: vpcGVR, Name: "vpc-busy-" + strconv.Itoa(i)}})
		}
		time.Sleep(100 * time.Millisecond)
		r.waits.mu.Lock()
		busy := r.waits.waiting["busy"]
		r.waits.mu.Unlock()
		if busy != maxWaitingPerWorkspace {
			t.Errorf("%d waits in the busy workspace, want its share, %d", busy, maxWaitingPerWorkspace)
		}
	})
	t.Run("one workspace's deletions do not crowd another's out of the queue", func(t *testing.T) {
		// Not started: nothing is taken from the queue.
		r := NewReplayer(newFakeDeferralStore(), newFakeLedger(), logr.Discard())
		targets := []index.Referenced{{Resource: vpcGVR, Name: "vpc-1"}}
		for i := range maxWaiting {
			// The same dependent's deletion asked for again and
			// again, and as many others.
			r.DependentDeleted("attacker", vmGVR, metav1.ObjectMeta{Name: "vm-held", Namespace: "default", UID: "vm-held"}, targets)
			r.DependentDeleted("attacker", vmGVR, metav1.ObjectMeta{Name: "vm-" + strconv.Itoa(i), Namespace: "default", UID: types.UID("vm-" + strconv.Itoa(i))}, targets)
		}
		r.DependentDeleted("victim", vmGVR, metav1.ObjectMeta{Name: "vm-1", Namespace: "default", UID: "vm-victim"}, targets)
		queued := map[string]int{}
		held := 0
		for len(r.waiting) > 0 {
			g := <-r.waiting
			queued[g.cluster]++
			if g.meta.UID == "vm-held" {
				held++
			}
		}
		if queued["victim"] != 1 || queued["attacker"] != maxQueuedPerWorkspace || held != 1 {
			t.Errorf("queued %v (the held dependent %d times), want the victim's one, the attacker's share %d, the held dependent once", queued, held, maxQueuedPerWorkspace)
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
