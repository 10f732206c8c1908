package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// writers is how many writes a run has in flight at once. Writes to
// different logical clusters (webhook configurations, index
// configurations) and to different rules (statuses) do not depend on each
// other; one after another, a run that changed many of them waited a round
// trip for each.
const writers = 8

// concurrently calls fn(i) for every i in [0, n), at most writers at a
// time, and returns when all have returned.
func concurrently(n int, fn func(i int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(writers, n) {
		wg.Go(func() {
			for i := range work {
				fn(i)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// configJob is what a run does about one kind of webhook configuration in
// one logical cluster: ensure it covers gvrs, or, when stale is set, remove
// stale, ours as the run read it.
type configJob struct {
	cluster string
	gvrs    []schema.GroupVersionResource
	stale   *process.ShardObject
}

// configJobs returns the jobs of one kind of configuration: one for each
// cluster in want, and one for each configuration called name in existing
// whose cluster want leaves out.
func configJobs(want map[string][]schema.GroupVersionResource, existing []process.ShardObject, name string) []configJob {
	jobs := make([]configJob, 0, len(want))
	for cluster, gvrs := range want {
		jobs = append(jobs, configJob{cluster: cluster, gvrs: gvrs})
	}
	for i, o := range existing {
		if _, wanted := want[o.Cluster]; !wanted && o.Obj.GetName() == name {
			jobs = append(jobs, configJob{cluster: o.Cluster, stale: &existing[i]})
		}
	}
	return jobs
}
