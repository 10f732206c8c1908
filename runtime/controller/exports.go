package controller

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// ExportFunc returns what the APIExport name in a logical cluster serves.
// An export that does not exist is process.ErrExportNotFound; any other
// error is a failure to read, which may pass.
type ExportFunc func(ctx context.Context, cluster, name string) (*v1alpha1.ExportTypes, error)

// exportReader reads exports through the dep-ctrl export's virtual
// workspaces, each at most once per run, and keeps the read failures so
// that the run is retried.
type exportReader struct {
	client   func(url, cluster string) (dynamic.Interface, error)
	bindings map[string]Binding
	seen     map[exportKey]exportResult
	// cache keeps what exports serve between runs.
	cache *process.ExportCache
	errs  []error
}

type exportKey struct{ cluster, name string }

type exportResult struct {
	types *v1alpha1.ExportTypes
	err   error
}

func (r *exportReader) read(ctx context.Context, cluster, name string) (*v1alpha1.ExportTypes, error) {
	key := exportKey{cluster, name}
	if res, ok := r.seen[key]; ok {
		return res.types, res.err
	}
	res := r.fetch(ctx, key)
	if res.err != nil && !errors.Is(res.err, process.ErrExportNotFound) {
		res.err = fmt.Errorf("in logical cluster %s: %w", cluster, res.err)
		r.errs = append(r.errs, res.err)
	}
	r.seen[key] = res
	return res.types, res.err
}

// fetch reads one export through the cache; it touches nothing of r but
// the cache, so that several may run at once.
func (r *exportReader) fetch(ctx context.Context, key exportKey) exportResult {
	c, err := r.client(r.bindings[key.cluster].URL, key.cluster)
	if err != nil {
		return exportResult{err: err}
	}
	types, err := r.cache.Read(ctx, c, key.cluster, key.name)
	return exportResult{types: types, err: err}
}

// prefetch reads the exports of keys several at a time, so that the plan,
// which asks for exports one by one, finds them read. A run prefetches what
// the previous run read: the exports rules name change rarely, and one not
// prefetched is read when asked for. A failure is not kept: an export no
// rule needs any more must not fail the run, and one still needed is read
// again when asked for.
func (r *exportReader) prefetch(ctx context.Context, keys []exportKey) {
	results := make([]exportResult, len(keys))
	concurrently(len(keys), func(i int) { results[i] = r.fetch(ctx, keys[i]) })
	for i, res := range results {
		if res.err == nil || errors.Is(res.err, process.ErrExportNotFound) {
			r.seen[keys[i]] = res
		}
	}
}

// keys returns the exports read so far.
func (r *exportReader) keys() []exportKey {
	out := make([]exportKey, 0, len(r.seen))
	for k := range r.seen {
		out = append(out, k)
	}
	return out
}
