package decision

// The dependents the intents recorded on an object name, as its deletion
// reads them first: those that are stored and still reference it decide a
// denial cheaply. Intents are recorded and judged in package index.

import (
	"context"
	"encoding/json"
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
