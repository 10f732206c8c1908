package decision

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// provenOneByOne is how many objects, at most, Unreferenced proves with
// the reads a deletion makes for each; more are proven with one read of
// every dependent, which costs the API server less than two filtered reads
// of them per object.
const provenOneByOne = 4

// proofsAtOnce bounds the one-by-one proofs that run at once.
const proofsAtOnce = 8

// placeReadTimeout bounds a read of every dependent in a place, which may
// be many more than a deletion reads.
const placeReadTimeout = time.Minute

// Unreferenced implements settle.Prover: which of the objects called names
// in namespace no stored dependent references, under the rules that protect
// them now. Writes on their way show as intents on the objects, which the
// caller checks.
func (v *Validator) Unreferenced(ctx context.Context, cluster, namespace string, gvr schema.GroupVersionResource, names []string) (map[string]bool, error) {
	protections := v.protections.Protections(gvr)
	if len(protections) == 0 {
		return nil, nil
	}
	unreferenced := map[string]bool{}
	if len(names) <= provenOneByOne {
		var mu sync.Mutex
		g, ctx := errgroup.WithContext(ctx)
		g.SetLimit(proofsAtOnce)
		for _, name := range names {
			g.Go(func() error {
				ctx, cancel := context.WithTimeout(ctx, v.opts.RequestTimeout)
				defer cancel()
				blockers, more, err := v.findBlockers(ctx, cluster, namespace, gvr.GroupResource(), name, protections, v.opts.MaxBlockersReported)
				if err == nil && len(blockers)+more == 0 {
					mu.Lock()
					unreferenced[name] = true
					mu.Unlock()
				}
				return err
			})
		}
		return unreferenced, g.Wait()
	}
	ctx, cancel := context.WithTimeout(ctx, placeReadTimeout)
	defer cancel()
	protections = byDependent(protections)
	referenced := make([]map[string]bool, len(protections))
	g, ctx := errgroup.WithContext(ctx)
	for i, p := range protections {
		g.Go(func() (err error) {
			referenced[i], err = v.finder.ReferencedNames(ctx, cluster, namespace, p)
			if err != nil {
				return fmt.Errorf("listing %s for rule %s: %w", p.Dependent.GroupResource(), p.Rule, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, name := range names {
		if !slices.ContainsFunc(referenced, func(r map[string]bool) bool { return r[name] }) {
			unreferenced[name] = true
		}
	}
	return unreferenced, nil
}

// ReferencedNames implements DependentFinder with one consistent read of
// every dependent, whatever their index labels say.
func (f *FrontProxyFinder) ReferencedNames(ctx context.Context, cluster, namespace string, p registry.Protection) (map[string]bool, error) {
	names := map[string]bool{}
	err := f.inScope(cluster, namespace, p, func(namespace string) error {
		clear(names)
		_, err := f.list(ctx, cluster, namespace, p, listOptions{}, func(item map[string]interface{}) bool {
			if f.IgnoreDeleting && len(itemDeleting.Values(item)) > 0 {
				return true
			}
			for _, path := range p.Paths {
				for _, v := range path.Values(item) {
					names[v] = true
				}
			}
			return true
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}
