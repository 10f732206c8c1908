package webhook

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// editRule changes the field path of the rule called name on shard and
// bumps its generation, as the API server does on a spec change; it
// returns the rule as now stored.
func (f *fakeShards) editRule(t *testing.T, shard, name, path string) *v1alpha1.DependencyRule {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.rules[shard] {
		u := &unstructured.Unstructured{Object: m}
		if u.GetName() != name {
			continue
		}
		u.SetGeneration(u.GetGeneration() + 1)
		rule := &v1alpha1.DependencyRule{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, rule); err != nil {
			t.Fatal(err)
		}
		rule.Spec.Dependencies[0].FieldRef.Path = path
		edited, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rule)
		if err != nil {
			t.Fatal(err)
		}
		clear(m)
		for k, v := range edited {
			m[k] = v
		}
		return rule
	}
	t.Fatalf("no rule %s on %s", name, shard)
	return nil
}

// startedRuleSync is a RuleSync over f that read every shard, on a clock
// the test moves with advance.
func startedRuleSync(t *testing.T, f *fakeShards) (s *RuleSync, advance func(time.Duration)) {
	t.Helper()
	s = NewRuleSync(f.virtualWorkspaces(t), registry.New(), logr.Discard())
	clock := time.Unix(1000, 0)
	var mu sync.Mutex
	s.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	if _, err := s.populate(context.Background()); err != nil {
		t.Fatalf("populate: %v", err)
	}
	close(s.initialized)
	return s, func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = clock.Add(d) }
}

// observeStored gives s the rule as the watch would: Observe reads it
// through a client.
func observeStored(t *testing.T, s *RuleSync, cluster string, rule *v1alpha1.DependencyRule) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := rule.DeepCopy()
	stored.ResourceVersion = ""
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).Build()
	if err := s.Observe(context.Background(), c, cluster, rule.Name); err != nil {
		t.Fatalf("Observe: %v", err)
	}
}

func registeredPath(t *testing.T, s *RuleSync, key string) string {
	t.Helper()
	r, ok := s.Registry.Get(key)
	if !ok {
		t.Fatalf("rule %s not registered", key)
	}
	for _, p := range r.ByTarget {
		return p.Paths[0].String()
	}
	return ""
}

// TestDecidableAfterAPause: a replica whose process stood still while a
// rule was edited resumes with the rule's old version registered and the
// watch event still on its way. Its first request finds the last
// confirmation older than MaxAge, reads the rules again, and waits for the
// registry to hold the new version: it is refused while the event does
// not come, and decided once it has come, with the new path in force.
func TestDecidableAfterAPause(t *testing.T) {
	f := newFakeShards(t, "shard-a")
	f.addRule(t, "shard-a", "cluster-a", "vm-needs-vpc")
	s, advance := startedRuleSync(t, f)
	key := registry.Key("cluster-a", "vm-needs-vpc")
	ctx := context.Background()
	if err := s.Decidable(ctx, admission.Of("cluster-a"), admission.Recent); err != nil {
		t.Fatalf("Decidable with the registry current: %v", err)
	}

	edited := f.editRule(t, "shard-a", "vm-needs-vpc", ".spec.network.vpc")
	advance(time.Minute) // the process stood still meanwhile
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err := s.Decidable(short, admission.Of("cluster-a"), admission.Recent)
	if err == nil || !strings.Contains(err.Error(), "retry later") || !strings.Contains(err.Error(), "current rules") {
		t.Fatalf("Decidable with the edit unread after a pause = %v, want a refusal saying the rules are not confirmed current", err)
	}
	if got := registeredPath(t, s, key); got != ".spec.vpcRef.name" {
		t.Fatalf("registered path %q; the test expects the old one until the event comes", got)
	}

	go func() {
		time.Sleep(200 * time.Millisecond)
		observeStored(t, s, "cluster-a", edited)
	}()
	if err := s.Decidable(ctx, admission.Of("cluster-a"), admission.Recent); err != nil {
		t.Fatalf("Decidable once the edit's event came: %v", err)
	}
	if got := registeredPath(t, s, key); got != ".spec.network.vpc" {
		t.Errorf("decided with path %q registered, want the edited .spec.network.vpc", got)
	}
}

// TestDecidableNeedsOnlyItsShards: a shard that cannot be read is
// confirmed current for no request once its last confirmation is older
// than MaxAge, and the refusal names it; requests whose rules live on the
// other shard are decided.
func TestDecidableNeedsOnlyItsShards(t *testing.T) {
	f, s, advance := twoShardRules(t, admission.Recent)
	ctx := context.Background()
	f.set(func() { f.down["shard-b"] = true })
	advance(time.Minute)
	tests := []struct {
		name    string
		scope   admission.Scope
		refused bool
	}{
		{"rules on the shard up", admission.Of("cluster-a"), false},
		{"rules on the shard down", admission.Of("cluster-b"), true},
		{"rules on both", admission.Of("cluster-a", "cluster-b"), true},
		{"a cluster no read found", admission.Of("cluster-new"), true},
		{"no clusters named", admission.Unnamed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Decidable(ctx, tt.scope, admission.Recent)
			switch {
			case !tt.refused && err != nil:
				t.Errorf("Decidable = %v, want nil", err)
			case tt.refused && (err == nil || !strings.Contains(err.Error(), "/shard-b") || !strings.Contains(err.Error(), "retry later")):
				t.Errorf("Decidable = %v, want a refusal naming shard-b", err)
			}
		})
	}
}

// TestOneConfirmationServesManyRequests: requests that arrive together
// after the last confirmation aged share one read of each shard; a request
// that finds it older than half of MaxAge is decided at once, and starts
// the next read ahead of need.
func TestOneConfirmationServesManyRequests(t *testing.T) {
	f := newFakeShards(t, "shard-a")
	f.addRule(t, "shard-a", "cluster-a", "vm-needs-vpc")
	s, advance := startedRuleSync(t, f)
	ctx := context.Background()
	lists := func() int { f.mu.Lock(); defer f.mu.Unlock(); return f.lists["shard-a"] }

	advance(time.Minute)
	before := lists()
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := s.Decidable(ctx, admission.Of("cluster-a"), admission.Recent); err != nil {
				t.Errorf("Decidable: %v", err)
			}
		})
	}
	wg.Wait()
	if got := lists() - before; got != 1 {
		t.Errorf("50 requests read the shard %d times, want once", got)
	}

	advance(DefaultMaxAge/2 + time.Millisecond)
	before = lists()
	if err := s.Decidable(ctx, admission.Of("cluster-a"), admission.Recent); err != nil {
		t.Fatalf("Decidable within MaxAge: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for lists() == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if lists() == before {
		t.Error("a request past half of MaxAge started no read ahead of need")
	}
}

// TestDeletionNeedsARead begun after it: a replica cut off from the shard
// of a rule moments after its last read confirmed the registry current
// decides writes on that read for MaxAge, but no deletion: each waits for a
// read begun after it arrived, which cannot be made, and is refused
// naming the shard; once the shard answers and the registry holds what it
// serves, a deletion is decided again.
func TestDeletionNeedsARead(t *testing.T) {
	f := newFakeShards(t, "shard-a")
	f.addRule(t, "shard-a", "cluster-a", "vm-needs-vpc")
	s, advance := startedRuleSync(t, f)
	ctx := context.Background()
	lists := func() int { f.mu.Lock(); defer f.mu.Unlock(); return f.lists["shard-a"] }
	if err := s.Decidable(ctx, admission.Of("cluster-a"), admission.Now); err != nil {
		t.Fatalf("a deletion with the shard up: %v", err)
	}
	advance(time.Millisecond)
	before := lists()
	if err := s.Decidable(ctx, admission.Of("cluster-a"), admission.Now); err != nil {
		t.Fatalf("a deletion with the shard up: %v", err)
	}
	if lists() == before {
		t.Error("a deletion was decided on a read begun before it arrived")
	}

	f.set(func() { f.down["shard-a"] = true })
	advance(time.Millisecond)
	if err := s.Decidable(ctx, admission.Of("cluster-a"), admission.Recent); err != nil {
		t.Errorf("a write within MaxAge of the last read: %v", err)
	}
	err := s.Decidable(ctx, admission.Of("cluster-a"), admission.Now)
	if err == nil || !strings.Contains(err.Error(), "/shard-a") || !strings.Contains(err.Error(), "retry later") {
		t.Errorf("a deletion with the shard cut off = %v, want a refusal naming shard-a", err)
	}

	f.set(func() { f.down["shard-a"] = false })
	advance(time.Millisecond)
	if err := s.Decidable(ctx, admission.Of("cluster-a"), admission.Now); err != nil {
		t.Errorf("a deletion once the shard is back: %v", err)
	}
}

// TestAStoppedShardHoldsUpOnlyItsRequests: a shard that answers nothing
// (a stopped process: every read of it lasts until the client gives up)
// holds up no deletion whose rules all live on a shard that answers, not
// even one that arrives while a read of the stopped shard is under way;
// a deletion that depends on it is refused, naming it.
func TestAStoppedShardHoldsUpOnlyItsRequests(t *testing.T) {
	f, s, advance := twoShardRules(t, admission.Now)
	ctx := context.Background()
	f.set(func() { f.hung["shard-b"] = true })
	advance(time.Minute)

	// Reads of the stopped shard under way, as every request that needs
	// all shards starts one.
	go func() { _ = s.Decidable(ctx, admission.Unnamed, admission.Now) }()
	for i := range 3 {
		advance(time.Millisecond)
		// Less than the time a read of the stopped shard takes to fail.
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.Decidable(short, admission.Of("cluster-a"), admission.Now)
		cancel()
		if err != nil {
			t.Errorf("deletion %d with its rules on the shard up: %v", i, err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err := s.Decidable(short, admission.Of("cluster-b"), admission.Now)
	if err == nil || !strings.Contains(err.Error(), "/shard-b") || !strings.Contains(err.Error(), "retry later") {
		t.Errorf("a deletion with its rules on the stopped shard = %v, want a refusal naming shard-b", err)
	}
}

// fakeHealth is the health of a watch of every shard.
type fakeHealth struct {
	mu     sync.Mutex
	losses int
	live   bool
}

func (h *fakeHealth) Health(string) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.losses, h.live
}

func (h *fakeHealth) set(losses int, live bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.losses, h.live = losses, live
}

// TestWriteWaitsWhileTheWatchIsDown: the MaxAge bound of a write holds
// only while the watch that would deliver a change runs. Once the watch of
// the shard ended, a write too waits for a read begun after it arrived, and
// is refused while the shard cannot be read; once the watch is live again,
// after a loss, one more read restores the bound.
func TestWriteWaitsWhileTheWatchIsDown(t *testing.T) {
	f := newFakeShards(t, "shard-a")
	f.addRule(t, "shard-a", "cluster-a", "vm-needs-vpc")
	s, advance := startedRuleSync(t, f)
	health := &fakeHealth{live: true}
	s.Watches = []WatchHealth{health}
	ctx := context.Background()
	lists := func() int { f.mu.Lock(); defer f.mu.Unlock(); return f.lists["shard-a"] }
	write := func() error { return s.Decidable(ctx, admission.Of("cluster-a"), admission.Recent) }

	if err := write(); err != nil {
		t.Fatalf("a write with the watch live: %v", err)
	}
	advance(time.Millisecond)
	before := lists()
	if err := write(); err != nil || lists() != before {
		t.Fatalf("a write within MaxAge with the watch live: %v, %d reads; want it decided on the last read", err, lists()-before)
	}

	health.set(1, false) // the watch's connection was reset
	f.set(func() { f.down["shard-a"] = true })
	advance(time.Millisecond)
	if err := write(); err == nil || !strings.Contains(err.Error(), "/shard-a") {
		t.Errorf("a write with the watch down and the shard unreadable = %v, want a refusal naming shard-a", err)
	}

	f.set(func() { f.down["shard-a"] = false })
	advance(time.Millisecond)
	before = lists()
	if err := write(); err != nil || lists() == before {
		t.Errorf("a write with the watch still down: %v, %d reads; want one read begun after it", err, lists()-before)
	}
	health.set(1, true) // live again, after one loss
	advance(time.Millisecond)
	before = lists()
	if err := write(); err != nil || lists() == before {
		t.Errorf("the first write with the watch live again: %v, %d reads; want one read", err, lists()-before)
	}
	advance(time.Millisecond)
	before = lists()
	if err := write(); err != nil || lists() != before {
		t.Errorf("a later write: %v, %d reads; want it decided on the last read", err, lists()-before)
	}
}

// twoShardRules is a started RuleSync over two shards, each holding one
// rule of its own logical cluster (cluster-a on shard-a, cluster-b on
// shard-b), that has decided a request needing both at fresh.
func twoShardRules(t *testing.T, fresh admission.Freshness) (*fakeShards, *RuleSync, func(time.Duration)) {
	t.Helper()
	f := newFakeShards(t, "shard-a", "shard-b")
	f.addRule(t, "shard-a", "cluster-a", "vm-needs-vpc")
	f.addRule(t, "shard-b", "cluster-b", "db-needs-vpc")
	s, advance := startedRuleSync(t, f)
	if err := s.Decidable(context.Background(), admission.Unnamed, fresh); err != nil {
		t.Fatalf("a request with every shard up: %v", err)
	}
	return f, s, advance
}
