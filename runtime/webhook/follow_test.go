package webhook

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

// TestFollowerRetriesUntilServed: a shard's virtual workspace that cannot
// list when the webhook starts (the export's virtual workspaces serve a
// moment after the first binding) is followed once it answers, without a
// restart or a change of the endpoint slice, and the start-up read comes
// from the same watch. (TestRuntimeBeforeBindings and TestFaults follow
// rules through a real kcp, deletions included.)
func TestFollowerRetriesUntilServed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeShards(t, "shard-a")
	f.addRule(t, "shard-a", "cluster-a", "vm-needs-vpc")
	f.set(func() { f.down["shard-a"] = true })
	watch, observed := followRules(ctx, t, f)
	seen := func() int { return observed()[registry.Key("cluster-a", "vm-needs-vpc")] }

	time.Sleep(500 * time.Millisecond)
	if n := seen(); n != 0 {
		t.Fatalf("observed %d times while the shard could not list", n)
	}
	url := f.srv.URL + "/shard-a"
	if _, err := watch.ListShard(ctx, url); err == nil {
		t.Fatal("ListShard succeeded before the shard could list")
	}

	f.set(func() { f.down["shard-a"] = false })
	check.Eventually(ctx, t, 20*time.Second, "the rule to be observed once the shard serves", func() error {
		if seen() == 0 {
			return fmt.Errorf("not observed yet")
		}
		return nil
	})
	objs, err := watch.ListShard(ctx, url)
	if err != nil || len(objs) != 1 || objs[0].Cluster != "cluster-a" || objs[0].Obj.GetName() != "vm-needs-vpc" {
		t.Fatalf("ListShard = %v, %v; want the one rule", objs, err)
	}

}

// TestFollowerSameNameInTwoWorkspaces: rules of the same name in two
// logical clusters of one shard are two rules, in the start-up read and in
// the events: the watch's store keys objects by their cluster too.
func TestFollowerSameNameInTwoWorkspaces(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeShards(t, "shard-a")
	f.addRule(t, "shard-a", "cluster-a", "vm-needs-vpc")
	f.addRule(t, "shard-a", "cluster-b", "vm-needs-vpc")
	watch, observed := followRules(ctx, t, f)
	var objs []process.ShardObject
	check.Eventually(ctx, t, 10*time.Second, "the shard's initial list", func() error {
		var err error
		objs, err = watch.ListShard(ctx, f.srv.URL+"/shard-a")
		return err
	})
	if len(objs) != 2 {
		t.Errorf("the start-up read holds %d rules, want both vm-needs-vpc", len(objs))
	}
	check.Eventually(ctx, t, 10*time.Second, "both rules observed", func() error {
		if got := observed(); len(got) != 2 {
			return fmt.Errorf("observed %v", got)
		}
		return nil
	})
}

// followRules starts a Follower of the rules on the fake shards, until ctx
// ends. observed says how often each rule (by registry key) was observed,
// each time with a client.
func followRules(ctx context.Context, t *testing.T, f *fakeShards) (watch *process.Cached, observed func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	follower := newFollower(t, f, 0)
	watch, err := follower.Follow("rules", v1alpha1.GroupVersionResource,
		func(_ context.Context, c client.Client, cluster, name string) error {
			if c == nil {
				t.Error("observed without a client")
			}
			mu.Lock()
			defer mu.Unlock()
			counts[registry.Key(cluster, name)]++
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	startFollower(ctx, t, f, follower)
	return watch, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(counts)
	}
}

// newFollower returns a Follower of the fake shards' virtual workspaces
// that verifies its informers every verifyPeriod (0: the default).
func newFollower(t *testing.T, f *fakeShards, verifyPeriod time.Duration) *Follower {
	t.Helper()
	scheme, err := process.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	shards, err := process.NewShards(f.virtualWorkspaces(t), scheme, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return &Follower{Shards: shards, Log: logr.Discard(), VerifyPeriod: verifyPeriod}
}

// startFollower starts follower, and the cache of each fake shard as the
// APIExport provider would, until ctx ends.
func startFollower(ctx context.Context, t *testing.T, f *fakeShards, follower *Follower) {
	t.Helper()
	go func() { _ = follower.Start(ctx) }()
	f.mu.Lock()
	shards := slices.Sorted(maps.Keys(f.rules))
	f.mu.Unlock()
	for _, s := range shards {
		cfg := rest.CopyConfig(follower.Shards.VW.Home)
		cfg.Host = f.srv.URL + "/" + s
		c, err := follower.Shards.NewEndpointCache(cfg, follower.Shards.Scheme())
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = c.Start(ctx) }()
	}
}

// TestFollowerClaimNotServedYet: on a shard where no workspace accepted the
// export's claim on index configurations, the virtual workspace answers 404
// for them; the watch's view is then empty, not missing, so the start-up
// read that comes from it (RuleSync.IndexShard) completes instead of
// holding the webhook unready.
func TestFollowerClaimNotServedYet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeShards(t, "shard-a") // serves rules only: 404 for anything else
	follower := newFollower(t, f, 0)
	watch, err := follower.Follow("index-configurations", process.MutatingWebhookConfigurationsGVR,
		func(context.Context, client.Client, string, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	startFollower(ctx, t, f, follower)
	check.Eventually(ctx, t, 10*time.Second, "the index configurations of a shard that does not serve them yet to read as none", func() error {
		objs, err := watch.ListShard(ctx, f.srv.URL+"/shard-a")
		if err == nil && len(objs) != 0 {
			return fmt.Errorf("read %d", len(objs))
		}
		return err
	})
}

// TestFollowerVerifiesWatches: a watch that stays open but misses a
// rule's deletion keeps the rule in its view until the follower compares
// the view with a list; then the view drops it and the rule is observed
// again, and found gone.
func TestFollowerVerifiesWatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeShards(t, "shard-a")
	f.stuck = true
	f.addRule(t, "shard-a", "c1", "kept")
	f.addRule(t, "shard-a", "c1", "deleted")
	var mu sync.Mutex
	observed := map[string]int{}
	follower := newFollower(t, f, 200*time.Millisecond)
	watch, err := follower.Follow("rules", v1alpha1.GroupVersionResource,
		func(_ context.Context, _ client.Client, _, name string) error {
			mu.Lock()
			defer mu.Unlock()
			observed[name]++
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	names := func() ([]string, error) {
		objs, err := watch.ListShard(ctx, f.srv.URL+"/shard-a")
		var out []string
		for _, o := range objs {
			out = append(out, o.Obj.GetName())
		}
		slices.Sort(out)
		return out, err
	}
	startFollower(ctx, t, f, follower)
	check.Eventually(ctx, t, 10*time.Second, "both rules in the view", func() error {
		got, err := names()
		if err == nil && !slices.Equal(got, []string{"deleted", "kept"}) {
			return fmt.Errorf("view %v", got)
		}
		return err
	})
	f.set(func() { f.rules["shard-a"] = f.rules["shard-a"][:1] })
	mu.Lock()
	before := observed["deleted"]
	mu.Unlock()
	check.Eventually(ctx, t, 20*time.Second, "the deleted rule dropped from the view", func() error {
		if got, err := names(); err != nil || !slices.Equal(got, []string{"kept"}) {
			return fmt.Errorf("view %v (%v)", got, err)
		}
		return nil
	})
	check.Eventually(ctx, t, 10*time.Second, "the deleted rule observed again", func() error {
		mu.Lock()
		defer mu.Unlock()
		if observed["deleted"] == before {
			return fmt.Errorf("not observed since it was deleted")
		}
		return nil
	})
}

// TestVerifyGoesOnPastAShardDown: a shard whose virtual workspace cannot
// list does not keep the others' views unverified: Verify corrects the
// healthy shard's view and reports every shard it could not list.
func TestVerifyGoesOnPastAShardDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	down := []string{"shard-b", "shard-c", "shard-d"}
	f := newFakeShards(t, append([]string{"shard-a"}, down...)...)
	f.stuck = true
	f.addRule(t, "shard-a", "c1", "kept")
	f.addRule(t, "shard-a", "c1", "deleted")
	for _, s := range down {
		f.addRule(t, s, "c2", "elsewhere")
	}
	watch, _ := followRules(ctx, t, f)
	for _, s := range append([]string{"shard-a"}, down...) {
		check.Eventually(ctx, t, 10*time.Second, "the initial list of "+s, func() error {
			objs, err := watch.ListShard(ctx, f.srv.URL+"/"+s)
			if err == nil && len(objs) == 0 {
				return fmt.Errorf("nothing listed yet")
			}
			return err
		})
	}
	f.set(func() {
		f.rules["shard-a"] = f.rules["shard-a"][:1]
		for _, s := range down {
			f.down[s] = true
		}
	})
	n, err := watch.Verify(ctx)
	if n != 1 {
		t.Errorf("Verify corrected %d objects, want 1 (the deleted rule of shard-a)", n)
	}
	for _, s := range down {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Verify's error %v does not name %s, which could not list", err, s)
		}
	}
	objs, lerr := watch.ListShard(ctx, f.srv.URL+"/shard-a")
	if lerr != nil || len(objs) != 1 || objs[0].Obj.GetName() != "kept" {
		t.Errorf("shard-a's view after Verify = %v (%v), want only kept", objs, lerr)
	}
}

// TestVerifyReadsInPages: Verify reads a shard's objects a page at a time
// and still finds a deletion the watch missed on a later page.
func TestVerifyReadsInPages(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeShards(t, "shard-a")
	f.stuck = true
	const n = 250
	for i := range n {
		f.addRule(t, "shard-a", "c1", fmt.Sprintf("rule-%03d", i))
	}
	watch, _ := followRules(ctx, t, f)
	url := f.srv.URL + "/shard-a"
	check.Eventually(ctx, t, 10*time.Second, "the initial list", func() error {
		objs, err := watch.ListShard(ctx, url)
		if err == nil && len(objs) != n {
			return fmt.Errorf("%d listed", len(objs))
		}
		return err
	})
	var lists int
	f.set(func() {
		// rule-240 goes, on the third page of a hundred.
		f.rules["shard-a"] = append(f.rules["shard-a"][:240:240], f.rules["shard-a"][241:]...)
		lists = f.lists["shard-a"]
	})
	if got, err := watch.Verify(ctx); got != 1 || err != nil {
		t.Fatalf("Verify = %d, %v; want the one deleted rule corrected", got, err)
	}
	f.set(func() { lists = f.lists["shard-a"] - lists })
	// Two reads (before and after the recheck), three pages each.
	if lists != 6 {
		t.Errorf("Verify made %d list requests, want 6: pages of 100", lists)
	}
	objs, err := watch.ListShard(ctx, url)
	if err != nil || len(objs) != n-1 {
		t.Errorf("the view holds %d rules after Verify (%v), want %d", len(objs), err, n-1)
	}
	for _, o := range objs {
		if o.Obj.GetName() == "rule-240" {
			t.Error("rule-240 is still in the view")
		}
	}
}
