package webhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/depctrl/terraform-provider-depctrl/runtime/virtualworkspace"
)

// ObserveFunc records the current state of the object called name in
// cluster, read through c.
type ObserveFunc func(ctx context.Context, c client.Client, cluster, name string) error

// Follower hands every change of the resources it follows, in every
// workspace of every shard's virtual workspace, to their ObserveFunc, with a
// client of the object's logical cluster.
//
// Its watches are its own (virtualworkspace.Watched, one per shard and
// resource) and retry until they can list: a virtual workspace that does
// not serve yet when the webhook starts (the export has no binding yet) or
// a shard that joins later is followed as soon as it answers. It reads the
// shards' URLs again whenever the endpoint slice changes, and every
// URLPeriod in case a change of the slice was missed; and every
// VerifyPeriod it compares each watch with a list, in case a watch missed
// an event (Watched.Verify).
type Follower struct {
	VW     *virtualworkspace.VirtualWorkspaces
	Scheme *runtime.Scheme
	Log    logr.Logger
	// URLPeriod is how often the shards' URLs are read again.
	URLPeriod time.Duration
	// VerifyPeriod is how often each watch is compared with a list.
	VerifyPeriod time.Duration

	followed []*followed
	mapper   meta.RESTMapper
	clients  sync.Map // clientKey -> client.Client
}

// followed is one followed resource.
type followed struct {
	name    string
	watched *virtualworkspace.Watched
	observe ObserveFunc
	queue   workqueue.TypedRateLimitingInterface[followedKey]
}

// followedKey names one followed object: where it was seen, and its name.
type followedKey struct{ url, cluster, name string }

type clientKey struct{ url, cluster string }

// Defaults of Follower.URLPeriod and Follower.VerifyPeriod.
const (
	DefaultURLPeriod    = 5 * time.Second
	DefaultVerifyPeriod = time.Minute
)

// Follow adds a resource of kind gvk (cluster-scoped, served as gvr) to
// follow; name names it in logs. It returns the watch, whose ListShard
// reads a shard from the same view the events come from. Call it before
// Start.
func (f *Follower) Follow(name string, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, observe ObserveFunc) *virtualworkspace.Watched {
	if f.mapper == nil {
		f.mapper = meta.NewDefaultRESTMapper(nil)
	}
	f.mapper.(*meta.DefaultRESTMapper).AddSpecific(gvk, gvr, gvr, meta.RESTScopeRoot)
	fw := &followed{name: name, observe: observe,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[followedKey](),
			workqueue.TypedRateLimitingQueueConfig[followedKey]{Name: name})}
	fw.watched = &virtualworkspace.Watched{VW: f.VW, GVR: gvr, Each: func(url string, obj *unstructured.Unstructured) {
		fw.queue.Add(followedKey{url: url, cluster: logicalcluster.From(obj).String(), name: obj.GetName()})
	}}
	f.followed = append(f.followed, fw)
	return fw.watched
}

// NeedLeaderElection: every replica keeps its own registry.
func (f *Follower) NeedLeaderElection() bool { return false }

// Start follows the shards until ctx ends.
func (f *Follower) Start(ctx context.Context) error {
	period := f.URLPeriod
	if period <= 0 {
		period = DefaultURLPeriod
	}
	var workers sync.WaitGroup
	for _, fw := range f.followed {
		fw.watched.Start(ctx)
		workers.Go(func() { f.work(ctx, fw) })
	}
	verifyPeriod := f.VerifyPeriod
	if verifyPeriod <= 0 {
		verifyPeriod = DefaultVerifyPeriod
	}
	watches := make([]*virtualworkspace.Watched, len(f.followed))
	for i, fw := range f.followed {
		watches[i] = fw.watched
	}
	workers.Go(func() { virtualworkspace.KeepVerified(ctx, verifyPeriod, f.Log, watches...) })
	defer func() {
		for _, fw := range f.followed {
			fw.queue.ShutDown()
		}
		workers.Wait()
	}()
	// Follow a new shard as soon as the endpoint slice names it; the
	// period covers what the watch of the slice misses.
	urlsChanged := make(chan struct{}, 1)
	if err := f.VW.WatchURLs(ctx, func() {
		select {
		case urlsChanged <- struct{}{}:
		default:
		}
	}); err != nil {
		return err
	}
	var lastErr string
	for {
		err := f.followURLs(ctx)
		switch {
		case err != nil && err.Error() != lastErr:
			f.Log.Error(err, "following the shards' virtual workspaces; retrying", "after", period)
		case err == nil && lastErr != "":
			f.Log.Info("following the shards' virtual workspaces again")
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-urlsChanged:
		case <-time.After(period):
		}
	}
}

// followURLs reads the shards' URLs and follows them in every watch.
func (f *Follower) followURLs(ctx context.Context) error {
	urls, err := f.VW.URLs(ctx)
	if err != nil {
		return err
	}
	for _, fw := range f.followed {
		if err := fw.watched.Follow(urls); err != nil {
			return err
		}
	}
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

// client returns the (shared) client of cluster at url.
func (f *Follower) client(url, cluster string) (client.Client, error) {
	k := clientKey{url, cluster}
	if c, ok := f.clients.Load(k); ok {
		return c.(client.Client), nil
	}
	c, err := f.VW.ObjectClient(url, cluster, f.Scheme, f.mapper)
	if err != nil {
		return nil, err
	}
	actual, _ := f.clients.LoadOrStore(k, c)
	return actual.(client.Client), nil
}
