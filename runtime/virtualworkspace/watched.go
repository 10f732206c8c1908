package virtualworkspace

import (
	"context"
	"fmt"
	"sync"

	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Watched keeps one resource of every workspace of every virtual workspace
// in memory, fed by one watch per shard, so that a run reads only what
// changed since the last instead of listing every object again (with 1 000
// DependencyRules, a LIST through the virtual workspaces takes most of a
// second).
//
// Its view is never partial: List fails until the watch of every URL it is
// given has delivered its initial list, and while the watch of one has
// ended and could not be started again (the shard cannot be reached): what
// it held then is kept, but may lack any change made since, so it is
// handed out again only once a list or a new watch has succeeded. A
// resource the export only claims, on a shard where no workspace accepted
// the claim yet, is listed as none (as ListShard does); once served, the
// informer's next list (within 30 s) brings what is there. It may lag the
// servers by the time a watch event takes to arrive; Changed and Each are
// called once an event is in the view, so a run started from them sees the
// change. A watch that cannot list yet retries on its own. Objects are kept
// per logical cluster (kcp's informer): a wildcard list holds objects of
// one name from many workspaces.
type Watched struct {
	VW  *VirtualWorkspaces
	GVR schema.GroupVersionResource
	// Changed is told of every add and delete, and of every update for
	// which Relevant (when set) returns true.
	Changed  func()
	Relevant func(old, updated *unstructured.Unstructured) bool
	// Each, when set, is told of every add, update and delete, with the
	// object (for a delete, its last known state) and the URL it came
	// from, once the change is in the view.
	Each func(url string, obj *unstructured.Unstructured)

	mu      sync.Mutex
	base    context.Context
	byURL   map[string]*shardWatch
	started bool
}

// Start sets the context the watches run in; Follow (or List) starts them.
// It returns at once.
func (w *Watched) Start(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.base, w.started = ctx, true
	w.byURL = map[string]*shardWatch{}
}

// List returns the objects of every workspace at urls, as ListAll would.
// It follows urls (Follow) and waits up to initialListWait for each new
// watch's initial list; it fails while one has not arrived.
func (w *Watched) List(ctx context.Context, urls []string) ([]Object, error) {
	if err := w.Follow(urls); err != nil {
		return nil, err
	}
	var out []Object
	for _, url := range urls {
		objs, err := w.ListShard(ctx, url)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Follow starts a watch for each of urls not yet watched and stops those of
// URLs no longer given. It does not wait for the initial lists: a watch
// that cannot list yet (a virtual workspace that does not serve yet, a
// shard that is down) keeps retrying on its own.
func (w *Watched) Follow(urls []string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started {
		return fmt.Errorf("watching %s: not started", w.GVR.GroupResource())
	}
	want := map[string]bool{}
	for _, url := range urls {
		want[url] = true
		if _, ok := w.byURL[url]; ok {
			continue
		}
		sw, err := w.watch(url)
		if err != nil {
			return err
		}
		w.byURL[url] = sw
	}
	for url, sw := range w.byURL {
		if !want[url] {
			sw.stop()
			delete(w.byURL, url)
		}
	}
	return nil
}

// ListShard returns the objects of every workspace at url, one followed
// URL. It waits up to initialListWait for the watch's initial list, and
// fails while it has not arrived; and it fails while the view is stale:
// once the watch has ended (the shard cannot be reached) and until a list
// or a new watch succeeds, the view may lack any change made meanwhile, so
// it is no more complete than one never listed. Every change after what it
// returns reaches Changed and Each.
func (w *Watched) ListShard(ctx context.Context, url string) ([]Object, error) {
	w.mu.Lock()
	sw, ok := w.byURL[url]
	w.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("watching %s at %s: not followed", w.GVR.GroupResource(), url)
	}
	return w.view(url, sw).list(ctx)
}

// view is the view of url, one followed URL.
func (w *Watched) view(url string, sw *shardWatch) view {
	return view{vw: w.VW, gvr: w.GVR, url: url, sw: sw}
}

// watch starts the watch of one virtual workspace URL.
func (w *Watched) watch(url string) (*shardWatch, error) {
	c, err := w.VW.Client(url, "*")
	if err != nil {
		return nil, err
	}
	res := c.Resource(w.GVR)
	live := newLiveness()
	lw := liveListWatch(w.GVR, &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, opts)
		},
	}, live)
	// kcp's informer keys its store by logical cluster as well as name: a
	// wildcard list holds objects of one name from many workspaces, which
	// client-go's informer would keep one of.
	inf := kcpinformers.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	if w.Changed != nil || w.Each != nil {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { w.changed(url, obj) },
			UpdateFunc: func(old, updated any) {
				o, _ := old.(*unstructured.Unstructured)
				u, _ := updated.(*unstructured.Unstructured)
				if w.Relevant == nil || o == nil || u == nil || w.Relevant(o, u) {
					w.changed(url, updated)
				}
			},
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				w.changed(url, obj)
			},
		}); err != nil {
			return nil, fmt.Errorf("watching %s at %s: %w", w.GVR.GroupResource(), url, err)
		}
	}
	ctx, stop := context.WithCancel(w.base)
	go inf.RunWithContext(ctx)
	return &shardWatch{informer: inf, live: live, stop: stop}, nil
}

// changed tells Changed and Each of one event.
func (w *Watched) changed(url string, obj any) {
	if w.Changed != nil {
		w.Changed()
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && w.Each != nil {
		w.Each(url, u)
	}
}

// Verify compares the view of every followed URL with a list (Verifier).
func (w *Watched) Verify(ctx context.Context) (int, error) {
	w.mu.Lock()
	views := make([]view, 0, len(w.byURL))
	for url, sw := range w.byURL {
		views = append(views, w.view(url, sw))
	}
	w.mu.Unlock()
	return verifyAll(ctx, views, func(url string, obj runtime.Object) { w.changed(url, obj) })
}

// Resource names the watched resource in logs.
func (w *Watched) Resource() string { return w.GVR.GroupResource().String() }
