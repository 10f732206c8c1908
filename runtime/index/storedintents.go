package index

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// An object's annotations hold 256 KiB in all, some 1 400 intents. So once
// an object carries more than pruneThreshold fresh intents, recording one
// more also removes those that Judge finds held: their writes are
// over and left their dependents stored and referencing the object, and a
// deletion finds such a dependent by reading the dependents. Intents younger than pruneMinAge are left alone;
// their writes are most likely still on their way.
const (
	pruneThreshold = 64
	pruneMinAge    = 2 * time.Second
)

// DependentReader reads one dependent (decision.FrontProxyFinder does).
type DependentReader interface {
	Referencing(ctx context.Context, cluster string, p registry.Protection, namespace, dependent, name string) (Dependent, error)
}

// storedIntents returns the keys of the fresh intents on the object called
// name of target that Judge finds held, when there are more than
// pruneThreshold fresh intents. One whose write the stored dependent does
// not show stored (it lacks the write's IntentLabel) stays, whatever that
// copy references.
func (ix *Indexer) storedIntents(ctx context.Context, cluster string, target schema.GroupVersionResource, name string, fresh []Recorded) []string {
	if ix.Dependents == nil || len(fresh) <= pruneThreshold {
		return nil
	}
	var keys []string
	for _, in := range fresh {
		if in.Name == "" || ix.now().Sub(in.At.Time) < pruneMinAge {
			continue
		}
		dependent := schema.ParseGroupResource(in.Resource)
		var paths []fieldpath.Path
		for _, r := range ix.schemas.IndexSchema(dependent).References {
			if r.Target == target.GroupResource() {
				paths = append(paths, r.Paths...)
			}
		}
		if len(paths) == 0 {
			continue
		}
		p := registry.Protection{Dependent: dependent.WithVersion(in.Version), Paths: paths}
		d, err := ix.Dependents.Referencing(ctx, cluster, p, in.Namespace, in.Name, name)
		if err != nil {
			ix.log.Info("reading a dependent to settle its intent failed", "cluster", cluster, "dependent", in.Resource+"/"+in.Name, "error", err.Error())
			return keys
		}
		if Judge(in, d) == Held {
			keys = append(keys, in.Key)
		}
	}
	return keys
}
