package decision

// The writes that the fresh intents on an object stand for, as its deletion
// reads them last, when the stored dependents show no blocker: each is
// judged (index.Judge) from a read of its dependent now.

import (
	"context"
	"fmt"

	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// pendingBlockers returns the dependents behind the fresh intents recorded
// on the object called name: each one whose write may still be stored, or
// is stored and left it referencing the object (index.Judge, from a read of
// the dependent now). The dependents listed by the reference index are the
// stored ones; an intent stands for a write admitted but perhaps not yet
// stored, which that list cannot see. So an intent whose write the stored
// dependent does not show stored (it lacks the write's IntentLabel) blocks,
// whatever that copy references, until the intent is withdrawn or expires.
// Only a write that is stored and left the dependent not referencing the
// object lets it go.
func (v *Validator) pendingBlockers(ctx context.Context, cluster string, name string, protections []registry.Protection, annotations map[string]string, limit int) ([]Blocker, error) {
	fresh, _ := index.On(annotations, v.now(), v.opts.IntentLifetime)
	if len(fresh) == 0 {
		return nil, nil
	}
	byResource := byDependentResource(protections)
	var blockers []Blocker
	seen := map[Blocker]bool{}
	for _, in := range fresh {
		p, ok := byResource[in.Resource]
		if !ok || !index.Standing(in.Intent, p.RuleUIDs, p.Since) {
			// No rule protects the object from this type any more, or
			// the rules the intent was recorded under are gone, and with
			// them, perhaps, the webhook that would have withdrawn it.
			continue
		}
		b := Blocker{Dependent: p.Dependent, Kind: p.DependentKind, Namespace: in.Namespace, Name: in.Name, Pending: true}
		if in.Name == "" {
			b.GenerateName = in.GenerateName
		} else {
			d, err := v.finder.Referencing(ctx, cluster, p, in.Namespace, in.Name, name)
			if err != nil {
				return nil, fmt.Errorf("reading %s %s, which is recorded as referencing the object: %w", p.Dependent.GroupResource(), in.Name, err)
			}
			switch index.Judge(in, d) {
			case index.Released:
				continue
			case index.Held:
				b.Pending = false
			}
		}
		if !seen[b] {
			seen[b] = true
			blockers = append(blockers, b)
		}
		if len(blockers) >= limit {
			break
		}
	}
	return blockers, nil
}
