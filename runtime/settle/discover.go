package settle

// Discovery: the places of protected objects that no request this replica
// admitted has shown it. A replica learns of a place from the creates and
// deletions it decides; objects that were there before it started, or
// before their type was protected, and that nothing touches since, would
// never be swept. So whenever a type's stamp becomes usable, one walk over
// the workspaces the webhook can read makes a place of the whole of each
// workspace that binds an export serving the type; its sweep lists what is
// there, and forgets the place when nothing is.

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Workspaces lists the logical clusters the webhook can read.
type Workspaces interface {
	// Walk calls visit with every logical cluster it reaches, each once,
	// and returns the first error that stopped it from reaching some.
	Walk(ctx context.Context, visit func(cluster string)) error
	// Serves reports whether cluster binds an APIExport that a rule names
	// as serving target: only there are objects of target protected ones
	// (elsewhere they are the workspace's own, or another export's, and
	// are not the settler's to label).
	Serves(ctx context.Context, cluster string, target schema.GroupVersionResource) (bool, error)
	// Served is Serves for several targets at once, with one read of the
	// workspace's bindings; an error says some could not be told, and
	// the others are answered.
	Served(ctx context.Context, cluster string, targets []schema.GroupVersionResource) (map[schema.GroupVersionResource]bool, error)
}

// Types lists the protected resources (registry.Registry.Targets).
type Types interface {
	Targets() []schema.GroupVersionResource
}

// discover walks the workspaces whenever watchStamps asks, for the types
// that wait for it, until ctx ends. Walks do not overlap: types asked for
// during one wait for the next.
func (s *Settler) discover(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		s.mu.Lock()
		types := make([]schema.GroupVersionResource, 0, len(s.discovering))
		for gr, gvr := range s.discovering {
			types = append(types, gvr)
			delete(s.discovering, gr)
		}
		s.mu.Unlock()
		if len(types) == 0 {
			continue
		}
		start := time.Now()
		workspaces, places, unknown := 0, 0, 0
		err := s.Workspaces.Walk(ctx, func(cluster string) {
			workspaces++
			served, err := s.Workspaces.Served(ctx, cluster, types)
			if err != nil {
				unknown++
				s.Log.V(1).Info("cannot tell whether a workspace serves the protected types", "cluster", cluster, "error", err.Error())
			}
			for _, gvr := range types {
				if served[gvr] {
					places++
					s.walked.Add(place{Cluster: cluster, GVR: gvr, Walked: true})
				}
			}
		})
		workspacesWalked.Add(float64(workspaces))
		log := s.Log.WithValues("resources", len(types), "workspaces", workspaces, "places", places, "unknown", unknown, "took", time.Since(start).String())
		if err != nil {
			// What it did reach is swept; the places it missed wait for a
			// request there, or for the next walk.
			log.Info("walking the workspaces found only some", "error", err.Error())
			continue
		}
		log.V(1).Info("workspaces walked for objects to settle")
	}
}
