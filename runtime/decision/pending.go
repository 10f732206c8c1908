package decision

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/depctrl/terraform-provider-depctrl/runtime/frontproxy"
	"github.com/depctrl/terraform-provider-depctrl/runtime/intent"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// pendingBlockers returns the dependents behind the fresh intents recorded
// on the object called name: each one that, read now, references it, or is
// not stored (yet). The dependents listed by the reference index are the
// stored ones; an intent stands for a write admitted but perhaps not yet
// stored, which that list cannot see. A dependent that is stored and no
// longer references the object does not block; one that is not found does,
// until its intent is withdrawn (its deletion does that) or expires.
func (v *Validator) pendingBlockers(ctx context.Context, cluster string, name string, protections []registry.Protection, annotations map[string]string) ([]Blocker, error) {
	fresh, _ := intent.On(annotations, v.now(), v.opts.IntentLifetime)
	if len(fresh) == 0 {
		return nil, nil
	}
	byResource := byDependentResource(protections)
	var blockers []Blocker
	seen := map[Blocker]bool{}
	for _, in := range fresh {
		p, ok := byResource[in.Resource]
		if !ok || in.At.Time.Before(p.Since.Add(-intent.ClockSkew)) {
			// No rule protects the object from this type any more, or
			// none did when the intent was recorded: the rule it was
			// recorded under is gone, and with it, perhaps, the webhook
			// that would have withdrawn it.
			continue
		}
		b := Blocker{Kind: p.DependentKind, Namespace: in.Namespace, Name: in.Name, Pending: true}
		if in.Name == "" {
			b.Name = in.GenerateName + "*"
		} else {
			found, referencing, err := v.finder.Referencing(ctx, cluster, p, in.Namespace, in.Name, name)
			if err != nil {
				return nil, fmt.Errorf("reading %s %s, which is recorded as referencing the object: %w", p.Dependent.GroupResource(), in.Name, err)
			}
			if found && !referencing {
				continue
			}
			b.Pending = !found
		}
		if !seen[b] {
			seen[b] = true
			blockers = append(blockers, b)
		}
		if len(blockers) >= v.opts.MaxBlockersReported {
			break
		}
	}
	return blockers, nil
}

// byDependentResource merges protections by dependent type (byDependent)
// and keys them the way intents name their dependents, "resource.group".
func byDependentResource(protections []registry.Protection) map[string]registry.Protection {
	out := map[string]registry.Protection{}
	for _, p := range byDependent(protections) {
		out[p.Dependent.GroupResource().String()] = p
	}
	return out
}

// Referencing implements DependentFinder with a GET of the dependent, which
// the API server answers from storage.
func (f *FrontProxyFinder) Referencing(ctx context.Context, cluster string, p registry.Protection, namespace, dependent, name string) (found, referencing bool, err error) {
	res := f.raw.Get().AbsPath(frontproxy.Path(cluster, p.Dependent, namespace, dependent)...).SetHeader("Accept", "application/json").Do(ctx)
	if err := res.Error(); err != nil {
		if apierrors.IsNotFound(err) {
			return false, false, nil
		}
		return false, false, err
	}
	body, _ := res.Raw()
	obj := map[string]interface{}{}
	if err := json.Unmarshal(body, &obj); err != nil {
		return false, false, fmt.Errorf("decoding %s %s: %w", p.Dependent.GroupResource(), dependent, err)
	}
	if f.IgnoreDeleting && len(itemDeleting.Values(obj)) > 0 {
		return true, false, nil
	}
	return true, references(obj, p.Paths, name), nil
}
