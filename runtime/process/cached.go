package process

import (
	"context"
	"fmt"
	"sync"

	mcpcache "github.com/kcp-dev/multicluster-provider/pkg/cache"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Cached is one resource in an informer of every shard's cache
// (Shards.Follow), read shard by shard.
//
// A shard's view is never partial: ListShard fails until the informer has
// delivered its initial list, and while its watch has ended and could not
// be started again (the shard cannot be reached): what it held then is
// kept, but may lack any change made since, so it is handed out again only
// once it was found equal to a list. A resource the export only claims, on
// a shard where no workspace accepted the claim, is listed as none; once
// served, the informer's next list (within 30 s) brings what is there.
// Objects are kept per logical cluster (kcp's informer): a wildcard list
// holds objects of one name from many workspaces.
type Cached struct {
	GVR schema.GroupVersionResource
	// Changed is told of every add and delete, and of every update for
	// which Relevant (when set) returns true.
	Changed  func()
	Relevant func(old, updated *unstructured.Unstructured) bool
	// Each, when set, is told of every add, update and delete, with the
	// object (for a delete, its last known state) and the URL of the shard
	// it came from, once the change is in the informer.
	Each func(url string, obj *unstructured.Unstructured)

	shards *Shards
	gvk    schema.GroupVersionKind

	mu    sync.Mutex
	byURL map[string]*shardWatch
}

// attach takes the informer of c's resource from wc, the cache of the shard
// at url, whose lists and watches live records, and tells c of its events.
func (c *Cached) attach(url string, wc mcpcache.WildcardCache, live *liveness) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(c.gvk)
	inf, err := wc.GetInformer(context.Background(), obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching %s at %s: %w", c.GVR.GroupResource(), url, err)
	}
	informer, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return fmt.Errorf("watching %s at %s: the cache's informer is a %T", c.GVR.GroupResource(), url, inf)
	}
	if c.Changed != nil || c.Each != nil {
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { c.changed(url, obj) },
			UpdateFunc: func(old, updated any) {
				o, _ := old.(*unstructured.Unstructured)
				u, _ := updated.(*unstructured.Unstructured)
				if c.Relevant == nil || o == nil || u == nil || c.Relevant(o, u) {
					c.changed(url, updated)
				}
			},
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				c.changed(url, obj)
			},
		}); err != nil {
			return fmt.Errorf("watching %s at %s: %w", c.GVR.GroupResource(), url, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byURL[url] = &shardWatch{informer: informer, live: live}
	return nil
}

// changed tells Changed and Each of one event.
func (c *Cached) changed(url string, obj any) {
	if c.Changed != nil {
		c.Changed()
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && c.Each != nil {
		c.Each(url, u)
	}
}

// List returns the objects of every workspace on the shards at urls: what
// ListShard returns for each.
func (c *Cached) List(ctx context.Context, urls []string) ([]ShardObject, error) {
	var out []ShardObject
	for _, url := range urls {
		objs, err := c.ListShard(ctx, url)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// ListShard returns the objects of every workspace on the shard at url, one
// the provider follows. It waits up to initialListWait for the informer's
// initial list, and fails while it has not arrived or while the view may
// be stale. Every change after what it returns reaches Changed and Each.
func (c *Cached) ListShard(ctx context.Context, url string) ([]ShardObject, error) {
	v, ok := c.view(url)
	if !ok {
		return nil, fmt.Errorf("watching %s at %s: the shard is not followed yet", c.GVR.GroupResource(), url)
	}
	return v.list(ctx)
}

// Health reports whether the watch of the shard at url is live, and how
// many times its view was lost so far: what a reader found current while
// the watch was live stays current for as long as both stay the same, every
// change since being on its way. A shard not followed is not live.
func (c *Cached) Health(url string) (losses int, live bool) {
	v, ok := c.view(url)
	if !ok {
		return 0, false
	}
	return v.sw.live.health()
}

// Verify lists every shard and compares the list with the view. A watch
// can miss an event and never know it: after a kcp restart, a virtual
// workspace's watch was seen resuming at its resource version and
// delivering later events but not a delete, so the object stayed in the
// view for good. Where the view still disagrees with a fresh list after
// verifyRecheck, Verify corrects it from the list and reports every object
// that differed to Changed and Each, as the watch would have (a deleted one
// with its last known state). A shard it cannot list does not keep the
// others unverified: it returns how many objects it corrected and the
// failures of every shard, joined.
func (c *Cached) Verify(ctx context.Context) (int, error) {
	c.mu.Lock()
	views := make([]view, 0, len(c.byURL))
	for url, sw := range c.byURL {
		views = append(views, c.viewOf(url, sw))
	}
	c.mu.Unlock()
	return verifyAll(ctx, views, c.changed)
}

// Resource names the resource in logs.
func (c *Cached) Resource() string { return c.GVR.GroupResource().String() }

// view is the view of the shard at url, if it is followed.
func (c *Cached) view(url string) (view, bool) {
	c.mu.Lock()
	sw, ok := c.byURL[url]
	c.mu.Unlock()
	if !ok {
		return view{}, false
	}
	return c.viewOf(url, sw), true
}

// viewOf is the view of the shard at url through sw.
func (c *Cached) viewOf(url string, sw *shardWatch) view {
	return view{vw: c.shards.VW, gvr: c.GVR, url: url, sw: sw}
}
