package decision

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// waitBook keeps the Replayer's waits on deleted dependents fair between
// workspaces: every dependent's deletion in any workspace the webhook
// serves becomes a wait, and a tenant that deletes dependents that stay
// (held by finalizers of its own) could otherwise fill the queue and the
// slots that every tenant's deferred deletions share. So a dependent is
// queued once until its wait ends however often its deletion is asked
// for, one workspace queues at most maxQueuedPerWorkspace and waits on at
// most maxWaitingPerWorkspace at once, and a wait beyond its workspace's
// share is dropped before it takes one of the slots all share (the resync
// tries its targets).
type waitBook struct {
	mu sync.Mutex
	// queued and waiting count, by workspace, the dependents queued and
	// those waited on now.
	queued, waiting map[string]int
	// pending holds the dependents queued or waited on.
	pending map[pendingDependent]struct{}
}

// pendingDependent names one deleted dependent in one workspace.
type pendingDependent struct {
	cluster         string
	gvr             schema.GroupVersionResource
	namespace, name string
	uid             types.UID
}

// maxQueuedPerWorkspace bounds the deleted dependents of one workspace
// queued to be waited on: a teardown's deletions come faster than they are
// waited on, and what is dropped is tried by the resync.
const maxQueuedPerWorkspace = 512

func newWaitBook() *waitBook {
	return &waitBook{queued: map[string]int{}, waiting: map[string]int{}, pending: map[pendingDependent]struct{}{}}
}

// queue counts d as queued, unless it is queued or waited on already or its
// workspace has its share queued; it reports whether d is to be sent.
func (b *waitBook) queue(d pendingDependent) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.pending[d]; ok || b.queued[d.cluster] >= maxQueuedPerWorkspace {
		return false
	}
	b.pending[d] = struct{}{}
	b.queued[d.cluster]++
	return true
}

// unqueue undoes queue for d, which was not sent.
func (b *waitBook) unqueue(d pendingDependent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pending, d)
	decrement(b.queued, d.cluster)
}

// start moves d from queued to waited on, unless its workspace waits on
// its share already: then d is forgotten, and start reports false.
func (b *waitBook) start(d pendingDependent) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	decrement(b.queued, d.cluster)
	if b.waiting[d.cluster] >= maxWaitingPerWorkspace {
		delete(b.pending, d)
		return false
	}
	b.waiting[d.cluster]++
	return true
}

// end forgets d, whose wait is over.
func (b *waitBook) end(d pendingDependent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pending, d)
	decrement(b.waiting, d.cluster)
}

func decrement(counts map[string]int, cluster string) {
	if counts[cluster]--; counts[cluster] <= 0 {
		delete(counts, cluster)
	}
}
