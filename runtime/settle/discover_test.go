package settle

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeWorkspaces reaches clusters, then fails with err when set; a
// cluster in own serves the type from a CRD of its own, not from an export
// a rule names; one in unknown cannot be told.
type fakeWorkspaces struct {
	clusters     []string
	err          error
	own, unknown map[string]bool
}

func (f fakeWorkspaces) Serves(_ context.Context, cluster string, _ schema.GroupVersionResource) (bool, error) {
	if f.unknown[cluster] {
		return false, errors.New("listing the APIBindings: forbidden")
	}
	return !f.own[cluster], nil
}

func (f fakeWorkspaces) Served(ctx context.Context, cluster string, targets []schema.GroupVersionResource) (map[schema.GroupVersionResource]bool, error) {
	out := map[schema.GroupVersionResource]bool{}
	for _, t := range targets {
		serves, err := f.Serves(ctx, cluster, t)
		if err != nil {
			return out, err
		}
		out[t] = serves
	}
	return out, nil
}

func (f fakeWorkspaces) Walk(_ context.Context, visit func(string)) error {
	for _, c := range f.clusters {
		visit(c)
	}
	return f.err
}

type fakeTypes []schema.GroupVersionResource

func (f fakeTypes) Targets() []schema.GroupVersionResource { return f }

// placesObjects holds the objects of each logical cluster, in namespaces.
type placesObjects struct {
	mu      sync.Mutex
	objs    map[string][]metav1.ObjectMeta
	settled []string
}

func (f *placesObjects) ListMeta(_ context.Context, cluster string, _ schema.GroupVersionResource, namespace string, visit func(*metav1.ObjectMeta)) error {
	for _, o := range f.objs[cluster] {
		if namespace == "" || o.Namespace == namespace {
			visit(&o)
		}
	}
	return nil
}

func (f *placesObjects) Settle(_ context.Context, cluster string, _ schema.GroupVersionResource, namespace, name, _, stamp string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settled = append(f.settled, cluster+"/"+namespace+"/"+name+"="+stamp)
	return nil
}

// namespacedProver knows which objects are referenced by namespace/name,
// and records in which namespaces it was asked.
type namespacedProver struct {
	mu         sync.Mutex
	referenced map[string]bool
	namespaces []string
}

func (f *namespacedProver) Unreferenced(_ context.Context, _, namespace string, _ schema.GroupVersionResource, names []string) (map[string]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.namespaces = append(f.namespaces, namespace)
	out := map[string]bool{}
	for _, n := range names {
		out[n] = !f.referenced[namespace+"/"+n]
	}
	return out, nil
}

// TestSettlerDiscovers: objects that no request showed the settler (there
// before it started, in places nothing touches) are found by a walk of the
// workspaces once their type's stamp is usable, and settled a namespace at
// a time, each proven with its own namespace's dependents; a workspace
// without objects of the type is forgotten; one that serves the type from
// elsewhere than the rules' exports, or cannot be told to, is never swept;
// a walk that fails part-way still sweeps what it reached.
func TestSettlerDiscovers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		walkErr error
	}{
		{name: "a whole walk"},
		{name: "a walk that fails part-way", walkErr: errors.New("listing the workspaces of root:org: forbidden")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stamps := &fakeStamps{"s1", true, "s1"}
			objs := &placesObjects{objs: map[string][]metav1.ObjectMeta{
				"c1":  {{Namespace: "a", Name: "vpc", ResourceVersion: "1"}, {Namespace: "b", Name: "vpc", ResourceVersion: "2"}, {Namespace: "b", Name: "used", ResourceVersion: "3"}},
				"own": {{Namespace: "a", Name: "own-crd", ResourceVersion: "4"}},
			}}
			prover := &namespacedProver{referenced: map[string]bool{"b/used": true}}
			clock := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
			s := &Settler{Stamps: stamps, Published: stamps, Objects: objs, Prover: prover, Pending: fakePending{},
				Intents: fakeIntents{}, After: time.Minute, Log: logr.Discard(), now: func() time.Time { return clock },
				Workspaces: fakeWorkspaces{clusters: []string{"root", "own", "unknown", "c1"}, err: tc.walkErr,
					own: map[string]bool{"own": true}, unknown: map[string]bool{"unknown": true}}, Types: fakeTypes{vpcGVR}}
			s.init()
			defer s.queue.ShutDown()
			defer s.walked.ShutDown()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go s.discover(ctx)

			s.watchStamps()
			var places []place
			for len(places) < 2 {
				p, _ := s.walked.Get()
				places = append(places, p)
				s.walked.Done(p)
			}
			if n := s.walked.Len() + s.queue.Len(); n != 0 {
				t.Fatalf("%d more places found, want only the workspaces that serve the type from the rules' exports", n)
			}
			sort.Slice(places, func(i, j int) bool { return places[i].Cluster < places[j].Cluster })
			want := []place{{Cluster: "c1", GVR: vpcGVR, Walked: true}, {Cluster: "root", GVR: vpcGVR, Walked: true}}
			if !slices.Equal(places, want) {
				t.Fatalf("places found %v, want %v", places, want)
			}

			clock = clock.Add(time.Minute)
			for _, p := range places {
				s.sweep(ctx, p)
			}
			sort.Strings(objs.settled)
			if want := []string{"c1/a/vpc=s1", "c1/b/vpc=s1"}; !slices.Equal(objs.settled, want) {
				t.Errorf("settled %v, want %v", objs.settled, want)
			}
			sort.Strings(prover.namespaces)
			if want := []string{"a", "b"}; !slices.Equal(prover.namespaces, want) {
				t.Errorf("proven in namespaces %v, want each once: %v", prover.namespaces, want)
			}
			if n := len(s.known[vpcGVR.GroupResource()]); n != 0 {
				t.Errorf("%d walked places kept among the known ones; the next walk finds them again", n)
			}
		})
	}
}

// TestSettlerDiscoversOnlyWhenUsable: no walk while the type's stamp is not
// usable (not published, or not settleable), and one walk when it becomes
// so; an unchanged stamp asks for none.
func TestSettlerDiscoversOnlyWhenUsable(t *testing.T) {
	stamps := &fakeStamps{"s1", true, ""}
	s := &Settler{Stamps: stamps, Published: stamps, Objects: &placesObjects{}, Prover: &namespacedProver{}, Pending: fakePending{},
		Intents: fakeIntents{}, After: time.Minute, Log: logr.Discard(), Workspaces: fakeWorkspaces{}, Types: fakeTypes{vpcGVR}}
	s.init()
	defer s.queue.ShutDown()
	s.watchStamps()
	if len(s.discovering) != 0 {
		t.Fatalf("a walk asked for under an unpublished stamp: %v", s.discovering)
	}
	stamps.published = "s1"
	s.watchStamps()
	if _, ok := s.discovering[vpcGVR.GroupResource()]; !ok {
		t.Fatal("no walk asked for once the stamp is usable")
	}
	delete(s.discovering, vpcGVR.GroupResource())
	s.watchStamps()
	if len(s.discovering) != 0 {
		t.Errorf("a walk asked for under an unchanged stamp: %v", s.discovering)
	}
}

// TestSettlerWalkedPlaceServedNoMore: a place a walk found is not swept
// once its workspace no longer serves the type from the rules' exports
// (the binding replaced by a type of its own), or cannot be told to.
func TestSettlerWalkedPlaceServedNoMore(t *testing.T) {
	for _, tc := range []struct {
		name      string
		workspace fakeWorkspaces
	}{
		{name: "its own type now", workspace: fakeWorkspaces{own: map[string]bool{"c1": true}}},
		{name: "cannot be told", workspace: fakeWorkspaces{unknown: map[string]bool{"c1": true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stamps := &fakeStamps{"s1", true, "s1"}
			objs := &placesObjects{objs: map[string][]metav1.ObjectMeta{"c1": {{Namespace: "a", Name: "vpc", ResourceVersion: "1"}}}}
			clock := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
			s := &Settler{Stamps: stamps, Published: stamps, Objects: objs, Prover: &namespacedProver{}, Pending: fakePending{},
				Intents: fakeIntents{}, After: time.Minute, Log: logr.Discard(), now: func() time.Time { return clock },
				Workspaces: tc.workspace, Types: fakeTypes{vpcGVR}}
			s.init()
			defer s.queue.ShutDown()
			s.watchStamps()
			clock = clock.Add(time.Minute)
			s.sweep(context.Background(), place{Cluster: "c1", GVR: vpcGVR, Walked: true})
			if len(objs.settled) != 0 {
				t.Errorf("settled %v in a workspace that does not serve the rules' type", objs.settled)
			}
		})
	}
}

// blockingObjects lists the objects of placesObjects, but holds every list
// in a cluster of slow until release is closed.
type blockingObjects struct {
	*placesObjects
	slow    map[string]bool
	release chan struct{}
	// held counts the lists being held.
	held *atomic.Int32
}

func (f blockingObjects) ListMeta(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace string, visit func(*metav1.ObjectMeta)) error {
	if f.slow[cluster] {
		f.held.Add(1)
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return f.placesObjects.ListMeta(ctx, cluster, gvr, namespace, visit)
}

// TestSettlerWalkDoesNotHoldUpRequests: while the sweeps of places a walk
// found are slow (many workspaces, each listed page by page), the place
// of a deletion is swept at once all the same: walked places wait in a
// queue of their own.
func TestSettlerWalkDoesNotHoldUpRequests(t *testing.T) {
	stamps := &fakeStamps{"s1", true, "s1"}
	walkedClusters := []string{"w1", "w2", "w3", "w4"}
	objs := &placesObjects{objs: map[string][]metav1.ObjectMeta{"asked": {{Namespace: "a", Name: "vpc", ResourceVersion: "1"}}}}
	for _, c := range walkedClusters {
		objs.objs[c] = []metav1.ObjectMeta{{Namespace: "a", Name: "vpc", ResourceVersion: "1"}}
	}
	release := make(chan struct{})
	defer close(release)
	slow := map[string]bool{}
	for _, c := range walkedClusters {
		slow[c] = true
	}
	held := &atomic.Int32{}
	s := &Settler{Stamps: stamps, Published: stamps, Objects: blockingObjects{placesObjects: objs, slow: slow, release: release, held: held},
		Prover: &namespacedProver{}, Pending: fakePending{}, Intents: fakeIntents{}, After: 10 * time.Millisecond, Log: logr.Discard(),
		Workspaces: fakeWorkspaces{clusters: walkedClusters}, Types: fakeTypes{vpcGVR}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Start(ctx) }()
	// Start has asked for a walk; wait until it has found its places and
	// a sweep of one is held, then ask for a deletion's sweep.
	deadline := time.Now().Add(10 * time.Second)
	for held.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if held.Load() == 0 {
		t.Fatal("no walked place was swept")
	}
	s.Deleted("asked", vpcGVR, "a")
	for time.Now().Before(deadline) {
		objs.mu.Lock()
		settled := slices.Contains(objs.settled, "asked/a/vpc=s1")
		objs.mu.Unlock()
		if settled {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the deletion's place was not swept while the walked places' sweeps were held")
}
