package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

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
// (process.Shards): the provider follows the endpoint slice and watches a
// shard whose virtual workspace does not serve yet until it does. They are
// taken from the informers themselves, not through the provider's engaged
// clusters: the registry must hear of every rule and configuration, also in
// a workspace whose binding is not ready or is gone. Each resource has a
// controller-runtime controller of its own whose requests name an object
// and the shard it was seen on; a failure is retried with backoff. Every
// VerifyPeriod each informer is compared with a list, in case its watch
// missed an event (process.Cached.Verify).
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
	cached     *process.Cached
	controller controller.TypedController[followedKey]

	mu sync.Mutex
	// queue is the controller's once it started; pending holds what the
	// informers delivered before.
	queue   workqueue.TypedRateLimitingInterface[followedKey]
	pending []followedKey
}

// followedKey names one followed object: where it was seen, and its name.
type followedKey struct{ url, cluster, name string }

type clientKey struct{ url, cluster string }

// DefaultVerifyPeriod is Follower.VerifyPeriod's default.
const DefaultVerifyPeriod = time.Minute

// Follow adds a resource (cluster-scoped, served as gvr) to follow; name
// names its controller. It returns the resource's view, whose ListShard
// reads a shard from the same informer the events come from. Call it
// before the provider starts.
func (f *Follower) Follow(name string, gvr schema.GroupVersionResource, observe ObserveFunc) (*process.Cached, error) {
	fw := &followed{}
	c, err := controller.NewTypedUnmanaged(name, controller.TypedOptions[followedKey]{
		Reconciler: reconcile.TypedFunc[followedKey](func(ctx context.Context, key followedKey) (reconcile.Result, error) {
			return reconcile.Result{}, f.observe(ctx, observe, key)
		}),
		LogConstructor: func(key *followedKey) logr.Logger {
			log := f.Log.WithValues("controller", name)
			if key != nil {
				log = log.WithValues("cluster", key.cluster, "name", key.name)
			}
			return log
		},
		// Every replica follows; a test may follow a name twice.
		NeedLeaderElection: ptr.To(false),
		SkipNameValidation: ptr.To(true),
	})
	if err != nil {
		return nil, fmt.Errorf("building the %s controller: %w", name, err)
	}
	if err := c.Watch(source.TypedFunc[followedKey](fw.start)); err != nil {
		return nil, fmt.Errorf("building the %s controller: %w", name, err)
	}
	fw.controller = c
	cached, err := f.Shards.Follow(&process.Cached{GVR: gvr, Each: func(url string, obj *unstructured.Unstructured) {
		fw.add(followedKey{url: url, cluster: logicalcluster.From(obj).String(), name: obj.GetName()})
	}})
	if err != nil {
		return nil, err
	}
	fw.cached = cached
	f.followed = append(f.followed, fw)
	return cached, nil
}

// start hands fw's controller the keys delivered so far, and the next ones.
func (fw *followed) start(_ context.Context, q workqueue.TypedRateLimitingInterface[followedKey]) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.queue = q
	for _, k := range fw.pending {
		q.Add(k)
	}
	fw.pending = nil
	return nil
}

// add asks fw's controller to observe key.
func (fw *followed) add(key followedKey) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.queue == nil {
		fw.pending = append(fw.pending, key)
		return
	}
	fw.queue.Add(key)
}

// NeedLeaderElection: every replica keeps its own registry.
func (f *Follower) NeedLeaderElection() bool { return false }

// Start runs the controllers, and verifies the informers, until ctx ends.
func (f *Follower) Start(ctx context.Context) error {
	var workers sync.WaitGroup
	errs := make([]error, len(f.followed))
	for i, fw := range f.followed {
		workers.Go(func() { errs[i] = fw.controller.Start(ctx) })
	}
	verifyPeriod := f.VerifyPeriod
	if verifyPeriod <= 0 {
		verifyPeriod = DefaultVerifyPeriod
	}
	views := make([]*process.Cached, len(f.followed))
	for i, fw := range f.followed {
		views[i] = fw.cached
	}
	workers.Go(func() { process.KeepVerified(ctx, verifyPeriod, f.Log, views...) })
	workers.Wait()
	return errors.Join(errs...)
}

func (f *Follower) observe(ctx context.Context, observe ObserveFunc, key followedKey) error {
	c, err := f.client(key.url, key.cluster)
	if err != nil {
		return err
	}
	return observe(ctx, c, key.cluster, key.name)
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
