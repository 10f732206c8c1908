package controller

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// TestConcurrently: every index runs once, never more than writers at a
// time.
func TestConcurrently(t *testing.T) {
	for _, n := range []int{0, 1, writers, 3*writers + 1} {
		var mu sync.Mutex
		seen := map[int]int{}
		var running, most atomic.Int32
		concurrently(n, func(i int) {
			now := running.Add(1)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			mu.Lock()
			seen[i]++
			mu.Unlock()
			running.Add(-1)
		})
		if len(seen) != n {
			t.Fatalf("n=%d: ran %d indexes", n, len(seen))
		}
		for i, c := range seen {
			if c != 1 || i < 0 || i >= n {
				t.Fatalf("n=%d: index %d ran %d times", n, i, c)
			}
		}
		if most.Load() > writers {
			t.Fatalf("n=%d: %d at once, more than %d", n, most.Load(), writers)
		}
	}
}

// TestConfigJobs: a configuration is ensured in every wanted cluster and
// removed where it is ours and no longer wanted; others' objects of another
// name are left alone.
func TestConfigJobs(t *testing.T) {
	vpcs := gvr("network.test.io", "vpcs")
	obj := func(cluster, name string) process.ShardObject {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		return process.ShardObject{Cluster: cluster, Obj: u}
	}
	existing := []process.ShardObject{obj("a", "ours"), obj("c", "ours"), obj("d", "theirs")}
	jobs := configJobs(map[string][]schema.GroupVersionResource{"a": {vpcs}, "b": {vpcs}}, existing, "ours")
	var ensure, remove []string
	for _, j := range jobs {
		if j.stale != nil {
			remove = append(remove, j.cluster+"/"+j.stale.Obj.GetName())
			continue
		}
		if len(j.gvrs) != 1 || j.gvrs[0] != vpcs {
			t.Errorf("ensure in %s covers %v", j.cluster, j.gvrs)
		}
		ensure = append(ensure, j.cluster)
	}
	slices.Sort(ensure)
	if !slices.Equal(ensure, []string{"a", "b"}) || !slices.Equal(remove, []string{"c/ours"}) {
		t.Fatalf("ensure %v, remove %v; want [a b] and [c/ours]", ensure, remove)
	}
}
