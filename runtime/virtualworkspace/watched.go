package virtualworkspace

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// Watched keeps one resource of every workspace of every virtual workspace
// in memory, fed by one watch per shard, so that a run reads only what
// changed since the last instead of listing every object again (with 1 000
// DependencyRules, a LIST through the virtual workspaces takes most of a
// second).
//
// Its view is never partial: List fails until the watch of every URL it is
// given has delivered its initial list. It may lag the servers by the time a
// watch event takes to arrive; Changed is called once an event is in the
// view, so a run started from Changed sees the change.
type Watched struct {
	VW  *VirtualWorkspaces
	GVR schema.GroupVersionResource
	// Changed is told of every add and delete, and of every update for
	// which Relevant (when set) returns true.
	Changed  func()
	Relevant func(old, updated *unstructured.Unstructured) bool

	mu      sync.Mutex
	base    context.Context
	byURL   map[string]*shardWatch
	started bool
}

type shardWatch struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
}

// Start sets the context the watches run in; List starts them. It returns
// at once.
func (w *Watched) Start(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.base, w.started = ctx, true
	w.byURL = map[string]*shardWatch{}
}

// initialListWait bounds how long List waits for a new watch's initial
// list: a shard that does not answer fails the run (to be retried) instead
// of holding it.
const initialListWait = 10 * time.Second

// List returns the objects of every workspace at urls, as ListAll would.
// It starts a watch for each URL it has not seen and stops those of URLs no
// longer given. It waits up to initialListWait for a new watch's initial
// list, and fails while one has not arrived.
func (w *Watched) List(ctx context.Context, urls []string) ([]Object, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started {
		return nil, fmt.Errorf("watching %s: not started", w.GVR.GroupResource())
	}
	want := map[string]bool{}
	for _, url := range urls {
		want[url] = true
		if _, ok := w.byURL[url]; ok {
			continue
		}
		sw, err := w.watch(url)
		if err != nil {
			return nil, err
		}
		w.byURL[url] = sw
	}
	for url, sw := range w.byURL {
		if !want[url] {
			sw.stop()
			delete(w.byURL, url)
		}
	}
	var out []Object
	for _, url := range urls {
		sw := w.byURL[url]
		wait, cancel := context.WithTimeout(ctx, initialListWait)
		synced := cache.WaitForCacheSync(wait.Done(), sw.informer.HasSynced)
		cancel()
		if !synced {
			return nil, fmt.Errorf("watching %s at %s: the initial list has not arrived yet", w.GVR.GroupResource(), url)
		}
		for _, item := range sw.informer.GetStore().List() {
			u, ok := item.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			out = append(out, Object{URL: url, Cluster: u.GetAnnotations()[clusterAnnotation], Obj: u})
		}
	}
	return out, nil
}

// watch starts the watch of one virtual workspace URL.
func (w *Watched) watch(url string) (*shardWatch, error) {
	c, err := w.VW.Client(url, "*")
	if err != nil {
		return nil, err
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(c, w.GVR, "", 0, cache.Indexers{}, nil).Informer()
	if w.Changed != nil {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { w.Changed() },
			UpdateFunc: func(old, updated any) {
				o, _ := old.(*unstructured.Unstructured)
				u, _ := updated.(*unstructured.Unstructured)
				if w.Relevant == nil || o == nil || u == nil || w.Relevant(o, u) {
					w.Changed()
				}
			},
			DeleteFunc: func(any) { w.Changed() },
		}); err != nil {
			return nil, fmt.Errorf("watching %s at %s: %w", w.GVR.GroupResource(), url, err)
		}
	}
	ctx, stop := context.WithCancel(w.base)
	go inf.RunWithContext(ctx)
	return &shardWatch{informer: inf, stop: stop}, nil
}
