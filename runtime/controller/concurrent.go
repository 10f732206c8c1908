package controller

import "sync"

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
