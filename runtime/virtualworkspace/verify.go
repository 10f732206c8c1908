package virtualworkspace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// verifyRecheck is how long Verify lets the watch catch up with a list it
// disagrees with before it corrects the view: an event on its way explains
// a difference for that long.
const verifyRecheck = 2 * time.Second

// Verify lists every followed URL and compares the list with the view. A
// watch can miss an event and never know it: after a kcp restart, a
// virtual workspace's watch was seen resuming at its resource version and
// delivering later events but not a delete, so the object stayed in the
// view for good. Where the view still disagrees with a fresh list after
// verifyRecheck, Verify corrects it from the list and reports every
// object that differed to Changed and Each (a deleted one with its last
// known state), as the watch would have. A URL it cannot list does not
// keep the others unverified: it returns how many objects it corrected
// and the failures of every URL, joined.
func (w *Watched) Verify(ctx context.Context) (int, error) {
	w.mu.Lock()
	watches := make(map[string]*shardWatch, len(w.byURL))
	for url, sw := range w.byURL {
		watches[url] = sw
	}
	w.mu.Unlock()
	corrected := 0
	var errs []error
	for url, sw := range watches {
		if ctx.Err() != nil {
			return corrected, ctx.Err()
		}
		n, err := w.verifyURL(ctx, url, sw)
		corrected += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return corrected, errors.Join(errs...)
}

// verifyURL is Verify for the view of one URL.
func (w *Watched) verifyURL(ctx context.Context, url string, sw *shardWatch) (int, error) {
	if !sw.informer.HasSynced() {
		// Its initial list is still to come, and will be complete.
		return 0, nil
	}
	first, err := w.differences(ctx, url, sw)
	if err != nil || len(first) == 0 {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(verifyRecheck):
	}
	again, err := w.differences(ctx, url, sw)
	if err != nil {
		return 0, err
	}
	store := sw.informer.GetStore()
	corrected := 0
	for k, d := range again {
		if before, ok := first[k]; !ok || resourceVersion(before.viewed) != resourceVersion(d.viewed) {
			// The watch delivered something for it meanwhile: it is
			// not stuck on this object.
			continue
		}
		var err error
		switch {
		case d.listed == nil:
			err = store.Delete(d.viewed)
		case d.viewed == nil:
			err = store.Add(d.listed)
		default:
			err = store.Update(d.listed)
		}
		if err != nil {
			return corrected, fmt.Errorf("correcting the view of %s at %s: %w", w.GVR.GroupResource(), url, err)
		}
		obj := d.listed
		if obj == nil {
			obj = d.viewed
		}
		w.changed(url, obj)
		corrected++
	}
	return corrected, nil
}

// KeepVerified verifies each of watches every period until ctx ends,
// logging what it corrected and what it could not list.
func KeepVerified(ctx context.Context, period time.Duration, log logr.Logger, watches ...*Watched) {
	process.Every(ctx, period, func() {
		for _, w := range watches {
			resource := w.GVR.GroupResource().String()
			n, err := w.Verify(ctx)
			if err != nil && ctx.Err() == nil {
				log.Error(err, "verifying a watch against a list", "resource", resource)
			}
			if n > 0 {
				log.Info("a watch had missed changes: corrected from a list", "resource", resource, "objects", n)
			}
		}
	})
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

// verifyPageSize is how many objects Verify reads per request: it holds a
// page at a time, and copies only the objects that differ, so a verify
// of many objects does not hold all of them at once besides the view.
const verifyPageSize = 100

// differences lists url and compares it with sw's view, by logical
// cluster, namespace and name (the key), and resource version.
func (w *Watched) differences(ctx context.Context, url string, sw *shardWatch) (map[string]difference, error) {
	c, err := w.VW.Client(url, "*")
	if err != nil {
		return nil, err
	}
	key := func(u *unstructured.Unstructured) string {
		return logicalcluster.From(u).String() + "|" + u.GetNamespace() + "|" + u.GetName()
	}
	viewed := map[string]*unstructured.Unstructured{}
	for _, item := range sw.informer.GetStore().List() {
		if u, ok := item.(*unstructured.Unstructured); ok {
			viewed[key(u)] = u
		}
	}
	out := map[string]difference{}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.Resource(w.GVR).List(ctx, opts)
	})
	// One page ahead at most: a larger buffer would hold more pages.
	p.PageSize, p.PageBufferSize = verifyPageSize, 1
	err = p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		listed, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("listed a %T, not an object", obj)
		}
		k := key(listed)
		v := viewed[k]
		delete(viewed, k)
		if v == nil || v.GetResourceVersion() != listed.GetResourceVersion() {
			out[k] = difference{viewed: v, listed: listed.DeepCopy()}
		}
		return nil
	})
	if notServedYet(w.GVR, err) {
		// Nothing is served: the view should hold nothing either.
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("verifying the view of %s at %s: %w", w.GVR.GroupResource(), url, err)
	}
	for k, v := range viewed {
		out[k] = difference{viewed: v}
	}
	return out, nil
}
