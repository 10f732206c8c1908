package process

import (
	"context"
	"fmt"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
)

// shardWatch is the informer of one resource on one shard, and whether its
// view is current (liveness).
type shardWatch struct {
	informer cache.SharedIndexInformer
	live     *liveness
}

// view reads the informer of one resource on one shard (url), and compares
// it with a list of the shard.
type view struct {
	vw  *VirtualWorkspaces
	gvr schema.GroupVersionResource
	url string
	sw  *shardWatch
}

// initialListWait bounds how long a read waits for a new watch's initial
// list, or for a watch that ended to be current again: a shard that does
// not answer fails the read (to be retried) instead of holding it.
const initialListWait = 10 * time.Second

// list returns the objects of every workspace in the view. It waits up to
// initialListWait for the watch's initial list, and fails while it has not
// arrived; and it fails while the view is stale: once the watch has ended
// (the shard cannot be reached) and until a list or a new watch succeeds,
// the view may lack any change made meanwhile, so it is no more complete
// than one never listed.
func (v view) list(ctx context.Context) ([]ShardObject, error) {
	wait, cancel := context.WithTimeout(ctx, initialListWait)
	defer cancel()
	if !cache.WaitForCacheSync(wait.Done(), v.sw.informer.HasSynced) {
		return nil, fmt.Errorf("watching %s at %s: the initial list has not arrived yet", v.gvr.GroupResource(), v.url)
	}
	caughtUp, loss, err := v.sw.live.wait(wait)
	if err != nil {
		return nil, fmt.Errorf("watching %s at %s: the view may be stale: %w", v.gvr.GroupResource(), v.url, err)
	}
	if !caughtUp {
		if err := v.catchUp(wait, loss); err != nil {
			return nil, fmt.Errorf("watching %s at %s: the view may be stale: it could not be read for a while, and %w", v.gvr.GroupResource(), v.url, err)
		}
	}
	items := v.sw.informer.GetStore().List()
	out := make([]ShardObject, 0, len(items))
	for _, item := range items {
		if u, ok := item.(*unstructured.Unstructured); ok {
			out = append(out, ShardObject{URL: v.url, Cluster: logicalcluster.From(u).String(), Obj: u})
		}
	}
	return out, nil
}

// catchUpPoll is how often catchUp compares the view with a list.
const catchUpPoll = 200 * time.Millisecond

// catchUp waits until the view, live again after it was stale, is equal to
// a list: until then, the changes made while it was stale may be missing
// from it, still on their way. loss is the one it recovers from.
func (v view) catchUp(ctx context.Context, loss int) error {
	for {
		d, err := v.differences(ctx)
		if err != nil {
			return err
		}
		if len(d) == 0 {
			v.sw.live.caughtUpAfter(loss)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d objects in it still differ from a list", len(d))
		case <-time.After(catchUpPoll):
		}
	}
}

// difference is one object on which the view and a list disagree; nil
// where one of them does not have it.
type difference struct{ viewed, listed *unstructured.Unstructured }

func resourceVersion(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	return u.GetResourceVersion()
}

// verifyPageSize is how many objects a comparison reads per request: it
// holds a page at a time, and copies only the objects that differ, so a
// comparison of many objects does not hold all of them at once besides the
// view.
const verifyPageSize = 100

// differences lists the shard and compares it with the view, by logical
// cluster, namespace and name (the key), and resource version.
func (v view) differences(ctx context.Context) (map[string]difference, error) {
	c, err := v.vw.Client(v.url, "*")
	if err != nil {
		return nil, err
	}
	key := func(u *unstructured.Unstructured) string {
		return logicalcluster.From(u).String() + "|" + u.GetNamespace() + "|" + u.GetName()
	}
	viewed := map[string]*unstructured.Unstructured{}
	for _, item := range v.sw.informer.GetStore().List() {
		if u, ok := item.(*unstructured.Unstructured); ok {
			viewed[key(u)] = u
		}
	}
	out := map[string]difference{}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.Resource(v.gvr).List(ctx, opts)
	})
	// One page ahead at most: a larger buffer would hold more pages.
	p.PageSize, p.PageBufferSize = verifyPageSize, 1
	err = p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		listed, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("listed a %T, not an object", obj)
		}
		k := key(listed)
		seen := viewed[k]
		delete(viewed, k)
		if seen == nil || resourceVersion(seen) != listed.GetResourceVersion() {
			out[k] = difference{viewed: seen, listed: listed.DeepCopy()}
		}
		return nil
	})
	if notServedYet(v.gvr, err) {
		// Nothing is served: the view should hold nothing either.
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("verifying the view of %s at %s: %w", v.gvr.GroupResource(), v.url, err)
	}
	for k, seen := range viewed {
		out[k] = difference{viewed: seen}
	}
	return out, nil
}
