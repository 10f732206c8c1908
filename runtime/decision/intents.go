package decision

// The intents recorded on an object being deleted, as its deletion reads
// them: first the dependents they name that are stored and still reference
// it, which decide a denial cheaply (recordedBlockers); last, when the
// stored dependents show no blocker, the writes the fresh ones stand for,
// each judged (index.Judge) from a read of its dependent now
// (pendingBlockers). Intents are recorded and judged in package index.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// maxRecordedChecked bounds the dependents recordedBlockers reads: the
// newest intents first, so that a denial stays cheap however many the
// object carries.
const maxRecordedChecked = 4

// recordedBlockers returns the dependents, among those the intents on the
// object called name record (fresh or expired), that are stored and still
// reference it, each confirmed with a GET. The dependent whose write made a
// reference most recently is the likeliest to still hold it, so a denial
// usually needs no LIST of the dependents: one read of a dependent, which
// the API server answers from storage, whatever their number. It only ever
// finds reasons to deny; finding none decides nothing.
func (v *Validator) recordedBlockers(ctx context.Context, cluster, name string, protections []registry.Protection, annotations map[string]string) []Blocker {
	var all []v1alpha1.Intent
	for k, val := range annotations {
		var in v1alpha1.Intent
		if strings.HasPrefix(k, v1alpha1.IntentAnnotationPrefix) && json.Unmarshal([]byte(val), &in) == nil && !in.At.IsZero() && index.Addressable(in) {
			all = append(all, in)
		}
	}
	if len(all) == 0 {
		return nil
	}
	sort.Slice(all, func(i, j int) bool { return all[i].At.After(all[j].At.Time) })
	byResource := byDependentResource(protections)
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		blockers []Blocker
		seen     = map[Blocker]bool{}
		checked  int
	)
	for _, in := range all {
		if checked == maxRecordedChecked {
			break
		}
		p, ok := byResource[in.Resource]
		if !ok || in.Name == "" || !index.Standing(in, p.RuleUIDs, p.Since) {
			continue
		}
		checked++
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := v.finder.Referencing(ctx, cluster, p, in.Namespace, in.Name, name)
			if err != nil || !d.Found || !d.References {
				return
			}
			b := Blocker{Dependent: p.Dependent, Kind: p.DependentKind, Namespace: in.Namespace, Name: in.Name}
			mu.Lock()
			defer mu.Unlock()
			if !seen[b] {
				seen[b] = true
				blockers = append(blockers, b)
			}
		}()
	}
	wg.Wait()
	sortBlockers(blockers)
	return blockers
}

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
