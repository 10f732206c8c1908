package webhook

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/runtime/virtualworkspace"
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
	vw, err := virtualworkspace.New(&rest.Config{Host: f.srv.URL + "/home", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "x")
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	observed := map[string]int{}
	follower := &Follower{VW: vw, Scheme: scheme, Log: logr.Discard(), URLPeriod: 50 * time.Millisecond}
	watch := follower.Follow("rules", v1alpha1.GroupVersionResource, v1alpha1.GroupVersion.WithKind("DependencyRule"),
		func(_ context.Context, c client.Client, cluster, name string) error {
			if c == nil {
				t.Error("observed without a client")
			}
			mu.Lock()
			defer mu.Unlock()
			observed[registry.Key(cluster, name)]++
			return nil
		})
	go func() { _ = follower.Start(ctx) }()
	seen := func() int {
		mu.Lock()
		defer mu.Unlock()
		return observed[registry.Key("cluster-a", "vm-needs-vpc")]
	}

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
	vw, err := virtualworkspace.New(&rest.Config{Host: f.srv.URL + "/home", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "x")
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	observed := map[string]bool{}
	follower := &Follower{VW: vw, Scheme: scheme, Log: logr.Discard(), URLPeriod: 50 * time.Millisecond}
	watch := follower.Follow("rules", v1alpha1.GroupVersionResource, v1alpha1.GroupVersion.WithKind("DependencyRule"),
		func(_ context.Context, _ client.Client, cluster, name string) error {
			mu.Lock()
			defer mu.Unlock()
			observed[registry.Key(cluster, name)] = true
			return nil
		})
	go func() { _ = follower.Start(ctx) }()
	var objs []virtualworkspace.Object
	check.Eventually(ctx, t, 10*time.Second, "the shard's initial list", func() error {
		objs, err = watch.ListShard(ctx, f.srv.URL+"/shard-a")
		return err
	})
	if len(objs) != 2 {
		t.Errorf("the start-up read holds %d rules, want both vm-needs-vpc", len(objs))
	}
	check.Eventually(ctx, t, 10*time.Second, "both rules observed", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(observed) != 2 {
			return fmt.Errorf("observed %v", observed)
		}
		return nil
	})
}
