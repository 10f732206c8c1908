package process

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// verifyRecheck is how long a verification lets the watch catch up with a
// list it disagrees with before it corrects the view: an event on its way
// explains a difference for that long.
const verifyRecheck = 2 * time.Second

// verifyAll verifies each of views, and tells changed of each object it
// corrected.
func verifyAll(ctx context.Context, views []view, changed func(url string, obj any)) (int, error) {
	corrected := 0
	var errs []error
	for _, v := range views {
		if ctx.Err() != nil {
			return corrected, ctx.Err()
		}
		n, err := v.verify(ctx, func(obj *unstructured.Unstructured) { changed(v.url, obj) })
		corrected += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return corrected, errors.Join(errs...)
}

// verify compares the view with a list, and again after verifyRecheck, and
// corrects what still differs and did not change meanwhile, telling
// changed of each object it corrected.
func (v view) verify(ctx context.Context, changed func(*unstructured.Unstructured)) (int, error) {
	if !v.sw.informer.HasSynced() {
		// Its initial list is still to come, and will be complete.
		return 0, nil
	}
	first, err := v.differences(ctx)
	if err != nil || len(first) == 0 {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(verifyRecheck):
	}
	again, err := v.differences(ctx)
	if err != nil {
		return 0, err
	}
	store := v.sw.informer.GetStore()
	corrected := 0
	for k, d := range again {
		if before, ok := first[k]; !ok || resourceVersion(before.viewed) != resourceVersion(d.viewed) {
			// The watch delivered something for it meanwhile: it is
			// not stuck on this object.
			continue
		}
		obj := d.listed
		var err error
		switch {
		case d.listed == nil:
			obj = d.viewed
			err = store.Delete(d.viewed)
		case d.viewed == nil:
			err = store.Add(d.listed)
		default:
			err = store.Update(d.listed)
		}
		if err != nil {
			return corrected, fmt.Errorf("correcting the view of %s at %s: %w", v.gvr.GroupResource(), v.url, err)
		}
		changed(obj)
		corrected++
	}
	return corrected, nil
}

// KeepVerified verifies each of views every period until ctx ends, logging
// what it corrected and what it could not list.
func KeepVerified(ctx context.Context, period time.Duration, log logr.Logger, views ...*Cached) {
	Every(ctx, period, func() {
		for _, w := range views {
			n, err := w.Verify(ctx)
			if err != nil && ctx.Err() == nil {
				log.Error(err, "verifying a watch against a list", "resource", w.Resource())
			}
			if n > 0 {
				log.Info("a watch had missed changes: corrected from a list", "resource", w.Resource(), "objects", n)
			}
		}
	})
}
