package index

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
)

// Defaults of a Reindexer.
const (
	// DefaultReindexWorkers is how many dependents are re-indexed at once
	// per webhook replica: each is one write on the consumer's shard, and
	// re-indexing must not crowd out the consumers' own writes.
	DefaultReindexWorkers = 2
	// reindexQueueSize bounds the dependents waiting to be re-indexed;
	// beyond it they are dropped and found again by a later deletion.
	reindexQueueSize = 20000
	// reindexRecent is how long a dependent, once written again, is not
	// queued again. A write that reached a replica with other rules, or one
	// not yet ready, leaves the dependent unindexed; it is retried after
	// this long rather than at every deletion in between.
	reindexRecent = time.Minute
	// reindexRefusedFor is how long a workspace that refused a write
	// (no patch permission on the type there) is not asked again.
	reindexRefusedFor = 5 * time.Minute
	// reindexTimeout bounds one write.
	reindexTimeout = 10 * time.Second
)

// Outcomes of a re-index, as reported in metrics.
const (
	reindexWritten = "written"
	reindexGone    = "gone"
	reindexRefused = "forbidden"
	reindexFailed  = "failed"
	reindexDropped = "dropped"
)

// Reindexer writes again, in the background, the dependents that a
// deletion had to read in full because they carry no current index stamp
// (written before their rule, its last edit, or its index configuration).
// Each write is an empty merge patch: it changes nothing a user set, but
// passes through the index webhook like any other update and comes back
// labelled, so later deletions find the dependent by its labels.
//
// The webhook may write dependents only where it is granted patch on their
// type (depctrl_shard's reindex); elsewhere kcp refuses, and the Reindexer
// stops asking that workspace about that type for a while. Nothing depends
// on it for correctness: an unindexed dependent is read in full anyway.
type Reindexer struct {
	raw     rest.Interface
	workers int
	queue   chan reindexItem
	log     logr.Logger
	now     func() time.Time

	mu      sync.Mutex
	queued  map[reindexItem]bool
	recent  map[reindexItem]time.Time
	refused map[refusalKey]time.Time
	// warned holds the types a refusal was logged for: without the grant
	// every workspace refuses, and once per type says all there is to say.
	warned map[schema.GroupResource]bool
}

type reindexItem struct {
	cluster   string
	resource  schema.GroupVersionResource
	namespace string
	name      string
}

type refusalKey struct {
	cluster  string
	resource schema.GroupResource
}

// ObjectKey names one dependent in its workspace.
type ObjectKey struct {
	Namespace, Name string
}

// NewReindexer returns a Reindexer writing through raw (a client of the
// front-proxy) with workers concurrent writes.
func NewReindexer(raw rest.Interface, workers int, log logr.Logger) *Reindexer {
	if workers < 1 {
		workers = 1
	}
	return &Reindexer{
		raw:     raw,
		workers: workers,
		queue:   make(chan reindexItem, reindexQueueSize),
		log:     log,
		now:     time.Now,
		queued:  map[reindexItem]bool{},
		recent:  map[reindexItem]time.Time{},
		refused: map[refusalKey]time.Time{},
		warned:  map[schema.GroupResource]bool{},
	}
}

// Enqueue asks for the dependents objs of resource in cluster to be
// written again. It never blocks: a deletion's answer must not wait for it.
func (r *Reindexer) Enqueue(cluster string, resource schema.GroupVersionResource, objs []ObjectKey) {
	if len(objs) == 0 {
		return
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if until, ok := r.refused[refusalKey{cluster, resource.GroupResource()}]; ok && now.Before(until) {
		return
	}
	for _, o := range objs {
		it := reindexItem{cluster: cluster, resource: resource, namespace: o.Namespace, name: o.Name}
		if r.queued[it] {
			continue
		}
		if at, ok := r.recent[it]; ok && now.Sub(at) < reindexRecent {
			continue
		}
		select {
		case r.queue <- it:
			r.queued[it] = true
		default:
			reindexed.WithLabelValues(reindexDropped).Inc()
		}
	}
}

// Start writes queued dependents until ctx ends. It implements
// manager.Runnable.
func (r *Reindexer) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range r.workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case it := <-r.queue:
					r.reindex(ctx, it)
				}
			}
		})
	}
	sweep := time.NewTicker(reindexRecent)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-sweep.C:
			r.forget()
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica re-indexes what its own deletions found.
func (r *Reindexer) NeedLeaderElection() bool { return false }

func (r *Reindexer) reindex(ctx context.Context, it reindexItem) {
	// The item stays queued while it is written, and becomes recent in
	// the same step as it stops being queued: an Enqueue in between finds
	// it one or the other, never neither, and does not write it again.
	r.mu.Lock()
	key := refusalKey{it.cluster, it.resource.GroupResource()}
	if until, ok := r.refused[key]; ok && r.now().Before(until) {
		delete(r.queued, it)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()

	wctx, cancel := context.WithTimeout(ctx, reindexTimeout)
	defer cancel()
	path, err := admission.Path(it.cluster, it.resource, it.namespace, it.name)
	if err == nil {
		err = path.On(r.raw.Patch(types.MergePatchType)).
			Param("fieldManager", "depctrl-webhook").
			Body([]byte("{}")).
			Do(wctx).Error()
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	r.recent[it] = r.now()
	delete(r.queued, it)
	switch {
	case err == nil:
		reindexed.WithLabelValues(reindexWritten).Inc()
	case apierrors.IsNotFound(err):
		reindexed.WithLabelValues(reindexGone).Inc()
	case apierrors.IsForbidden(err):
		reindexed.WithLabelValues(reindexRefused).Inc()
		if !r.warned[key.resource] {
			r.warned[key.resource] = true
			r.log.Info("not allowed to re-index dependents written before their rule; they are read in full at every protected deletion until written again. Grant patch on the type (depctrl_shard reindex) to have them re-indexed",
				"cluster", it.cluster, "resource", key.resource.String(), "err", err.Error())
		} else {
			r.log.V(1).Info("not allowed to re-index dependents", "cluster", it.cluster, "resource", key.resource.String())
		}
		r.refused[key] = r.now().Add(reindexRefusedFor)
	default:
		reindexed.WithLabelValues(reindexFailed).Inc()
		r.log.V(1).Info("re-indexing a dependent failed", "cluster", it.cluster, "resource", key.resource.String(),
			"namespace", it.namespace, "name", it.name, "err", err.Error())
	}
}

// forget drops memories that no longer hold anything back, so a webhook
// that serves many workspaces does not grow without bound.
func (r *Reindexer) forget() {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for it, at := range r.recent {
		if now.Sub(at) >= reindexRecent {
			delete(r.recent, it)
		}
	}
	for k, until := range r.refused {
		if !now.Before(until) {
			delete(r.refused, k)
		}
	}
}
