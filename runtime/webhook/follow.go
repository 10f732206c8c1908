package webhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// ObserveFunc records the current state of the object called name in
// cluster, read through c.
type ObserveFunc func(ctx context.Context, c client.Client, cluster, name string) error

// Follower hands every change of the resources it follows, in every
// workspace of every shard's virtual workspace, to their ObserveFunc, with a
// client of the object's logical cluster.
//
// The events come from the APIExport provider's cache of each shard
// (process.Shards): the provider follows the endpoint slice and
// watches a shard whose virtual workspace does not serve yet until it
// does. They are taken from the informers themselves, not through the
// provider's engaged clusters: the registry must hear of every rule and
// configuration, also in a workspace whose binding is not ready or is
// gone. Every VerifyPeriod each informer is compared with a list, in case
// its watch missed an event (process.Verifier).
type Follower struct {
	Shards *process.Shards
	Log    logr.Logger
	// VerifyPeriod is how often each informer is compared with a list.
	VerifyPeriod time.Duration

	followed []*followed
	clients  sync.Map // clientKey -> client.Client
}

// followed is one followed resource.
type followed struct {
	name    string
	cached  *process.Cached
	observe ObserveFunc
	queue   workqueue.TypedRateLimitingInterface[followedKey]
}

// followedKey names one followed object: where it was seen, and its name.
type followedKey struct{ url, cluster, name string }

type clientKey struct{ url, cluster string }

// DefaultVerifyPeriod is Follower.VerifyPeriod's default.
const DefaultVerifyPeriod = time.Minute

// Follow adds a resource (cluster-scoped, served as gvr) to follow; name
// names it in logs. It returns the resource's view, whose ListShard reads a
// shard from the same informer the events come from. Call it before the
// provider starts.
func (f *Follower) Follow(name string, gvr schema.GroupVersionResource, observe ObserveFunc) (*process.Cached, error) {
	fw := &followed{name: name, observe: observe,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[followedKey](),
			workqueue.TypedRateLimitingQueueConfig[followedKey]{Name: name})}
	cached, err := f.Shards.Follow(&process.Cached{GVR: gvr, Each: func(url string, obj *unstructured.Unstructured) {
		fw.queue.Add(followedKey{url: url, cluster: logicalcluster.From(obj).String(), name: obj.GetName()})
	}})
	if err != nil {
		return nil, err
	}
	fw.cached = cached
	f.followed = append(f.followed, fw)
	return cached, nil
}

// NeedLeaderElection: every replica keeps its own registry.
func (f *Follower) NeedLeaderElection() bool { return false }

// Start observes what the informers deliver until ctx ends.
func (f *Follower) Start(ctx context.Context) error {
	var workers sync.WaitGroup
	for _, fw := range f.followed {
		workers.Go(func() { f.work(ctx, fw) })
	}
	verifyPeriod := f.VerifyPeriod
	if verifyPeriod <= 0 {
		verifyPeriod = DefaultVerifyPeriod
	}
	views := make([]process.Verifier, len(f.followed))
	for i, fw := range f.followed {
		views[i] = fw.cached
	}
	workers.Go(func() { process.KeepVerified(ctx, verifyPeriod, f.Log, views...) })
	<-ctx.Done()
	for _, fw := range f.followed {
		fw.queue.ShutDown()
	}
	workers.Wait()
	return nil
}

// work observes the objects fw's queue names, one at a time, retrying a
// failure with backoff.
func (f *Follower) work(ctx context.Context, fw *followed) {
	for {
		key, shutdown := fw.queue.Get()
		if shutdown {
			return
		}
		err := f.observe(ctx, fw, key)
		switch {
		case err == nil:
			fw.queue.Forget(key)
		case ctx.Err() == nil:
			f.Log.Error(err, "observing; retrying", "watch", fw.name, "cluster", key.cluster, "name", key.name)
			fw.queue.AddRateLimited(key)
		}
		fw.queue.Done(key)
	}
}

func (f *Follower) observe(ctx context.Context, fw *followed, key followedKey) error {
	c, err := f.client(key.url, key.cluster)
	if err != nil {
		return err
	}
	if err := fw.observe(ctx, c, key.cluster, key.name); err != nil {
		return fmt.Errorf("%s: %w", fw.name, err)
	}
	return nil
}

// client returns the (shared) client of cluster at url. It reads the
// server, not the informer: an observation sees the object as it is now.
func (f *Follower) client(url, cluster string) (client.Client, error) {
	k := clientKey{url, cluster}
	if c, ok := f.clients.Load(k); ok {
		return c.(client.Client), nil
	}
	c, err := f.Shards.VW.ObjectClient(url, cluster, f.Shards.Scheme(), f.Shards.Mapper())
	if err != nil {
		return nil, err
	}
	actual, _ := f.clients.LoadOrStore(k, c)
	return actual.(client.Client), nil
}
