package index

import (
	"context"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// An object's annotations hold 256 KiB in all, some 1 400 intents, and every
// write that references the object rewrites them: a popular object's writes
// slow down as they grow. So once an object carries more than
// pruneThreshold fresh intents, recording one more also removes those that
// Judge finds held: their writes are over and left their dependents stored
// and referencing the object, and a deletion finds such a dependent by
// reading the dependents. Every fresh intent is read for, however young: a
// write is most often stored a few milliseconds after its intent, and what
// a popular object carries should be the writes really on their way, not
// every write of the last second.
const pruneThreshold = 8

// DependentReader reads dependents (decision.FrontProxyFinder does).
type DependentReader interface {
	// Referencing reads one dependent.
	Referencing(ctx context.Context, cluster string, p registry.Protection, namespace, dependent, name string) (Dependent, error)
	// StoredWith returns, of the IntentLabel values given, those that a
	// stored dependent of p in namespace carries, with that dependent.
	StoredWith(ctx context.Context, cluster string, p registry.Protection, namespace string, values []string, name string) (map[string]Stored, error)
}

// Stored is a dependent seen carrying a write's IntentLabel: its name, and
// whether it referenced the object then.
type Stored struct {
	Name       string
	References bool
}

// labelsPerRead bounds the IntentLabel values one read selects, so that
// its selector stays a short query.
const labelsPerRead = 50

// intentGroup is the intents whose dependents one read lists: one
// dependent type and version, in one namespace.
type intentGroup struct {
	resource, version, namespace string
}

// storedIntents returns the keys of the fresh intents on the object called
// name of target that Judge finds held, when there are more than
// pruneThreshold fresh intents: the dependent carries the write's
// IntentLabel, so the write is stored, and references the object. One
// whose write the stored dependent does not show stored stays, whatever
// that copy references. The dependents are read a group at a time, each
// group one LIST of those that carry the intents' labels.
func (ix *Indexer) storedIntents(ctx context.Context, cluster string, target schema.GroupVersionResource, name string, fresh []Recorded) []string {
	if ix.Dependents == nil || len(fresh) <= pruneThreshold {
		return nil
	}
	groups := map[intentGroup][]Recorded{}
	for _, in := range fresh {
		if in.Name == "" {
			// A generateName write: no name to read it by.
			continue
		}
		g := intentGroup{resource: in.Resource, version: in.Version, namespace: in.Namespace}
		groups[g] = append(groups[g], in)
	}
	var keys []string
	for g, ins := range groups {
		dependent := schema.ParseGroupResource(g.resource)
		var paths []fieldpath.Path
		for _, r := range ix.schemas.IndexSchema(dependent).References {
			if r.Target == target.GroupResource() {
				paths = append(paths, r.Paths...)
			}
		}
		if len(paths) == 0 {
			continue
		}
		p := registry.Protection{Dependent: dependent.WithVersion(g.version), Paths: paths}
		for chunk := range slices.Chunk(ins, labelsPerRead) {
			values := make([]string, len(chunk))
			for i, in := range chunk {
				values[i] = LabelValue(in.Token(), in.At.Time)
			}
			stored, err := ix.Dependents.StoredWith(ctx, cluster, p, g.namespace, values, name)
			if err != nil {
				ix.log.Info("reading the dependents of intents to settle them failed", "cluster", cluster, "dependents", g.resource, "namespace", g.namespace, "error", err.Error())
				return keys
			}
			for i, in := range chunk {
				// The dependent the intent names, as Judge reads it.
				if d, ok := stored[values[i]]; ok && d.Name == in.Name && d.References {
					keys = append(keys, in.Key)
				}
			}
		}
	}
	sort.Strings(keys)
	return keys
}
