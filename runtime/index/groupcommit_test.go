package index

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var groupVPCs = schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}

// slowTargets applies annotation patches to in-memory objects, each patch
// taking delay, and records how many were in flight per object at once.
type slowTargets struct {
	Targets
	delay time.Duration
	err   error

	mu          sync.Mutex
	annotations map[string]map[string]string // object name → annotations
	inFlight    map[string]int
	maxInFlight map[string]int
	patches     atomic.Int64
}

func newSlowTargets(delay time.Duration) *slowTargets {
	return &slowTargets{delay: delay, annotations: map[string]map[string]string{}, inFlight: map[string]int{}, maxInFlight: map[string]int{}}
}

func (s *slowTargets) Annotate(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name string, set map[string]*string) (TargetState, error) {
	s.patches.Add(1)
	s.mu.Lock()
	s.inFlight[name]++
	s.maxInFlight[name] = max(s.maxInFlight[name], s.inFlight[name])
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight[name]--
		s.mu.Unlock()
	}()
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return TargetState{}, ctx.Err()
	}
	if s.err != nil {
		return TargetState{}, s.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.annotations[name]
	if a == nil {
		a = map[string]string{}
		s.annotations[name] = a
	}
	for k, v := range set {
		if v == nil {
			delete(a, k)
		} else {
			a[k] = *v
		}
	}
	return TargetState{Found: true, Annotations: maps.Clone(a)}, nil
}

func value(s string) *string { return &s }

// TestGroupCommit: many writers annotating one object at once are written
// by few patches, one in flight at a time, and each writer returns only
// once a stored patch holds its annotation; other objects are not held up.
func TestGroupCommit(t *testing.T) {
	inner := newSlowTargets(20 * time.Millisecond)
	g := NewGroupCommit(inner, time.Second)
	const writers = 64
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			object := "hot"
			if i%8 == 0 {
				object = fmt.Sprintf("cold-%d", i)
			}
			key := fmt.Sprintf("intent-%d", i)
			state, err := g.Annotate(context.Background(), "c1", "apps", groupVPCs, object, map[string]*string{key: value("x")})
			switch {
			case err != nil:
				errs[i] = err
			case state.Annotations[key] != "x":
				errs[i] = fmt.Errorf("returned before a patch holding %s was stored: %v", key, state.Annotations)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := inner.maxInFlight["hot"]; got != 1 {
		t.Errorf("%d patches of one object were in flight at once, want 1", got)
	}
	if got := len(inner.annotations["hot"]); got != writers-writers/8 {
		t.Errorf("the popular object holds %d intents, want %d", got, writers-writers/8)
	}
	// 56 writers on one object: the first patch carries one, the rest
	// gather behind it; a few patches, not one each.
	if got := inner.patches.Load(); got > writers/8+8 {
		t.Errorf("%d patches for %d writers on %d objects", got, writers, writers/8+1)
	}
	if len(g.objects) != 0 {
		t.Errorf("%d objects still remembered after every batch was written", len(g.objects))
	}
}

// TestGroupCommitOrder: what a caller asks after another caller's patch
// returned is applied after it, so a retraction undoes the recording.
func TestGroupCommitOrder(t *testing.T) {
	inner := newSlowTargets(5 * time.Millisecond)
	g := NewGroupCommit(inner, time.Second)
	ctx := context.Background()
	if _, err := g.Annotate(ctx, "c1", "apps", groupVPCs, "vpc", map[string]*string{"a": value("1")}); err != nil {
		t.Fatal(err)
	}
	state, err := g.Annotate(ctx, "c1", "apps", groupVPCs, "vpc", map[string]*string{"a": nil, "b": value("2")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := state.Annotations["a"]; ok || state.Annotations["b"] != "2" {
		t.Fatalf("annotations = %v, want only b", state.Annotations)
	}
}

// TestGroupCommitFailures: a failed patch fails every caller whose
// annotations it carried; a caller that stops waiting returns at once,
// and the others still get the outcome.
func TestGroupCommitFailures(t *testing.T) {
	t.Run("a failed patch fails its batch", func(t *testing.T) {
		inner := newSlowTargets(10 * time.Millisecond)
		inner.err = errors.New("boom")
		g := NewGroupCommit(inner, time.Second)
		var wg sync.WaitGroup
		var failed atomic.Int64
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := g.Annotate(context.Background(), "c1", "apps", groupVPCs, "vpc", map[string]*string{fmt.Sprint(i): value("x")}); err != nil {
					failed.Add(1)
				}
			}()
		}
		wg.Wait()
		if failed.Load() != 8 {
			t.Fatalf("%d of 8 callers saw the failure", failed.Load())
		}
	})
	t.Run("a caller that stops waiting", func(t *testing.T) {
		inner := newSlowTargets(100 * time.Millisecond)
		g := NewGroupCommit(inner, time.Second)
		done := make(chan error, 1)
		go func() {
			_, err := g.Annotate(context.Background(), "c1", "apps", groupVPCs, "vpc", map[string]*string{"stays": value("x")})
			done <- err
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if _, err := g.Annotate(ctx, "c1", "apps", groupVPCs, "vpc", map[string]*string{"gives-up": value("x")}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the caller's deadline", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("the caller that waited: %v", err)
		}
	})
}

// TestPiggyback: what Piggyback hands over is written by no patch of its
// own but by the next patch of its object, where a key the writer sets
// itself keeps the writer's value; riders of another object stay behind;
// past maxRiders objects or maxRiderKeys keys Piggyback refuses, writing
// nothing, until riders older than riderLifetime are forgotten.
func TestPiggyback(t *testing.T) {
	inner := newSlowTargets(0)
	g := NewGroupCommit(inner, time.Second)
	ctx := context.Background()
	if _, err := g.Annotate(ctx, "c", "apps", groupVPCs, "hot", map[string]*string{"old-1": value("x"), "old-2": value("x"), "mine": value("x")}); err != nil {
		t.Fatal(err)
	}
	patches := inner.patches.Load()
	if !g.Piggyback("c", "apps", groupVPCs, "hot", map[string]*string{"old-1": nil, "old-2": nil, "mine": nil}) ||
		!g.Piggyback("c", "apps", groupVPCs, "other", map[string]*string{"gone": nil}) {
		t.Fatal("Piggyback refused with room left")
	}
	time.Sleep(20 * time.Millisecond)
	if got := inner.patches.Load(); got != patches {
		t.Fatalf("%d patches after Piggyback, want none of its own", got-patches)
	}
	state, err := g.Annotate(ctx, "c", "apps", groupVPCs, "hot", map[string]*string{"new": value("y"), "mine": value("y")})
	if err != nil {
		t.Fatal(err)
	}
	if got := inner.patches.Load() - patches; got != 1 {
		t.Fatalf("%d patches for one write with riders, want 1", got)
	}
	want := map[string]string{"new": "y", "mine": "y"}
	if !maps.Equal(state.Annotations, want) {
		t.Fatalf("annotations %v after the write the riders joined, want %v", state.Annotations, want)
	}
	if _, waiting := g.riders[objectKey{cluster: "c", namespace: "apps", target: groupVPCs, name: "other"}]; !waiting {
		t.Fatal("the riders of another object left with this one's patch")
	}
	for i := len(g.riders); i < maxRiders; i++ {
		if !g.Piggyback("c", "apps", groupVPCs, fmt.Sprintf("vpc-%d", i), map[string]*string{"k": nil}) {
			t.Fatalf("Piggyback refused at %d objects, below maxRiders", i)
		}
	}
	if g.Piggyback("c", "apps", groupVPCs, "one-too-many", map[string]*string{"k": nil}) {
		t.Fatal("Piggyback took riders past maxRiders")
	}
	// Riders that waited longer than riderLifetime are forgotten when room
	// is needed.
	later := time.Now().Add(riderLifetime + time.Second)
	g.now = func() time.Time { return later }
	if !g.Piggyback("c", "apps", groupVPCs, "one-too-many", map[string]*string{"k": nil}) || len(g.riders) != 1 || g.riderKeys != 1 {
		t.Fatalf("after riderLifetime, Piggyback found no room: %d riders, %d keys", len(g.riders), g.riderKeys)
	}
	// So are keys: one object's riders cannot take more than maxRiderKeys.
	many := map[string]*string{}
	for i := range maxRiderKeys {
		many[fmt.Sprintf("k-%d", i)] = nil
	}
	if g.Piggyback("c", "apps", groupVPCs, "keys", many) {
		t.Fatal("Piggyback took riders past maxRiderKeys")
	}
}
