// Package registry is the webhook's thread-safe index of DependencyRules:
// metadata only, with a reverse index from each protected resource to the
// dependents that may reference it, so a DELETE finds its rules in O(1).
//
// # The reference index (refindex.go)
//
// The rules imply an index of references in labels on the
// dependents themselves, so that a DELETE can ask the API server for the few
// dependents that reference the object instead of reading all of them.
//
// A dependent carries, for every object it references under the current
// rules, a label RefLabel(target, name), and a stamp label whose value
// names the exact set of rules the labels were computed from. The labels
// are written by a mutating webhook on every create and update, so they
// change in the same write as the fields they describe: there is no moment
// at which the index and the object disagree. A dependent without the
// current stamp (written before the rule or its webhook existed, or under
// other rules) says nothing, and the caller must read it in full; see
// Schema.
package registry

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// Protection is one way a protected object may be referenced: dependents of
// one type, any of whose field paths names it.
type Protection struct {
	// Rule is the rule's key, "<cluster>/<name>".
	Rule          string
	Dependent     schema.GroupVersionResource
	DependentKind string
	Paths         []fieldpath.Path
	// DependentExports are the APIExports that serve the dependent type:
	// the rule's, one; several when protections of several rules over one
	// dependent type are merged. A consumer's objects of the dependent's
	// group and resource are dependents only where the consumer binds one
	// of them: a workspace may serve a type of the same name from a CRD of
	// its own, or from another export.
	DependentExports []Export
	// Since is when the rule was created: a record made before it was
	// made under another rule.
	Since time.Time
	// RuleUIDs are the UIDs of the rules the protection is of: the rule's
	// own; several when protections of several rules are merged.
	RuleUIDs []string
	// TargetExports are the APIExports the rule names as serving the
	// protected type (its dependencies' apiExportRef): only a workspace
	// that binds one of them holds protected objects of the type.
	TargetExports []v1alpha1.APIExportRef
	// DeferDeletion: the rule defers the refused deletions of the objects
	// it protects (its spec.deferDeletion), unless they or their
	// namespace say otherwise.
	DeferDeletion bool
}

// Export names an APIExport: its logical cluster and name.
type Export struct {
	Cluster, Name string
}

// Rule is what the registry keeps of one DependencyRule.
type Rule struct {
	Key string
	// UID is the rule object's: a rule recreated under the same key is
	// another rule.
	UID        string
	Generation int64
	// Dependent is the type whose objects hold the references.
	Dependent schema.GroupVersionResource
	// IndexEpoch is the rule's status.indexEpoch.
	IndexEpoch string
	// ByTarget maps each protected resource to its protection.
	ByTarget map[schema.GroupVersionResource]Protection
}

// Registry is safe for concurrent use. Lookups never wait for writers for
// long: writers rebuild the affected index entries and swap them in.
type Registry struct {
	mu       sync.RWMutex
	rules    map[string]*Rule
	byTarget map[schema.GroupResource][]Protection
	// byDependent is the reference index schema of each dependent type.
	byDependent map[schema.GroupResource]Schema
	// staleTargets and staleDependents name the entries of byTarget and
	// byDependent that a change made stale. They are rebuilt on the next
	// read, all in one pass over the rules: rebuilding on every change
	// made registering n rules cost n passes over up to n rules (a
	// second, and hundreds of megabytes of garbage, for 1 000 rules at
	// start-up), while a read always sees every change before it.
	staleTargets    map[schema.GroupResource]bool
	staleDependents map[schema.GroupResource]bool
	// indexConfigs is the UID of the intact reference index configuration
	// in each logical cluster, as the webhook last saw it; see
	// SetIndexConfiguration.
	indexConfigs map[string]string
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{rules: map[string]*Rule{}, byTarget: map[schema.GroupResource][]Protection{}, byDependent: map[schema.GroupResource]Schema{},
		staleTargets: map[schema.GroupResource]bool{}, staleDependents: map[schema.GroupResource]bool{}, indexConfigs: map[string]string{}}
}

// SetIndexConfiguration records the UID of the intact reference index
// configuration in cluster; "" when there is none, or it was changed by
// someone other than the controller.
//
// A rule's status.indexEpoch says which configuration labelled its
// dependents, but the controller writes it, and only while it runs: a
// configuration deleted or edited while the controller is down lets writes
// go by unlabelled, and their old labels would still pass for current. So a
// rule's epoch counts only while the configuration it names is in place as
// the webhook sees it; otherwise its dependents are read in full.
func (r *Registry) SetIndexConfiguration(cluster, uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.indexConfigs[cluster] == uid {
		return
	}
	if uid == "" {
		delete(r.indexConfigs, cluster)
	} else {
		r.indexConfigs[cluster] = uid
	}
	for _, rule := range r.rules {
		if clusterOf(rule.Key) == cluster {
			r.staleDependents[rule.Dependent.GroupResource()] = true
		}
	}
}

// liveEpoch is the rule's index epoch while the configuration it names is
// in place, else ""; r.mu must be held.
func (r *Registry) liveEpoch(rule *Rule) string {
	if rule.IndexEpoch == "" || r.indexConfigs[clusterOf(rule.Key)] != rule.IndexEpoch {
		return ""
	}
	return rule.IndexEpoch
}

// clusterOf is the logical cluster of a rule key.
func clusterOf(key string) string {
	cluster, _, _ := strings.Cut(key, "/")
	return cluster
}

// Key is how rules are keyed: logical cluster and name.
func Key(cluster, name string) string { return cluster + "/" + name }

// Compile turns a rule into registry form, refusing one the webhook could
// not act on.
func Compile(key string, rule *v1alpha1.DependencyRule) (*Rule, error) {
	if errs := rule.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("rule %s is invalid: %w", key, errs.ToAggregate())
	}
	dependent := rule.DependentGVR()
	r := &Rule{Key: key, UID: string(rule.UID), Generation: rule.Generation, Dependent: dependent, IndexEpoch: rule.Status.IndexEpoch, ByTarget: map[schema.GroupVersionResource]Protection{}}
	for _, d := range rule.Spec.Dependencies {
		p, err := fieldpath.Parse(d.FieldRef.Path)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", key, err)
		}
		target := d.GVR()
		prot, ok := r.ByTarget[target]
		if !ok {
			prot = Protection{Rule: key, Dependent: dependent, DependentKind: rule.Spec.Dependent.Kind, Since: rule.CreationTimestamp.Time, RuleUIDs: []string{string(rule.UID)},
				DependentExports: []Export{{Cluster: clusterOf(key), Name: rule.Spec.Dependent.APIExportName}}, DeferDeletion: rule.Spec.DeferDeletion}
		}
		prot.Paths = append(prot.Paths, p)
		if !slices.Contains(prot.TargetExports, d.APIExportRef) {
			prot.TargetExports = append(prot.TargetExports, d.APIExportRef)
		}
		r.ByTarget[target] = prot
	}
	return r, nil
}

// Register adds or replaces the rule under key and returns what was there.
func (r *Registry) Register(key string, rule *v1alpha1.DependencyRule) (*Rule, error) {
	compiled, err := Compile(key, rule)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.rules[key]
	r.rules[key] = compiled
	r.markStale(old, compiled)
	return old, nil
}

// Unregister removes the rule under key, if any, and returns it.
func (r *Registry) Unregister(key string) *Rule {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.rules[key]
	if old == nil {
		return nil
	}
	delete(r.rules, key)
	r.markStale(old, nil)
	return old
}

// markStale records which entries a change from old to new makes stale.
// Deletions are matched by group and resource, whatever version the request
// used, so the entries are keyed without the version.
func (r *Registry) markStale(old, new *Rule) {
	for _, x := range []*Rule{old, new} {
		if x == nil {
			continue
		}
		r.staleDependents[x.Dependent.GroupResource()] = true
		for gvr := range x.ByTarget {
			r.staleTargets[gvr.GroupResource()] = true
		}
	}
}

// stale reports whether some entry awaits rebuilding; r.mu must be held.
func (r *Registry) stale() bool { return len(r.staleTargets) > 0 || len(r.staleDependents) > 0 }

// read runs f under the read lock, after rebuilding stale entries.
func (r *Registry) read(f func()) {
	r.mu.RLock()
	if !r.stale() {
		defer r.mu.RUnlock()
		f()
		return
	}
	r.mu.RUnlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rebuild()
	f()
}

// rebuild recomputes every stale entry from the rules, in one pass; r.mu
// must be held for writing.
func (r *Registry) rebuild() {
	if !r.stale() {
		return
	}
	lists := map[schema.GroupResource][]Protection{}
	versions := map[schema.GroupResource][]RuleVersion{}
	paths := map[schema.GroupResource]map[schema.GroupResource][]fieldpath.Path{}
	targetVersions := map[schema.GroupResource]string{}
	for _, rule := range r.rules {
		if dependent := rule.Dependent.GroupResource(); r.staleDependents[dependent] {
			versions[dependent] = append(versions[dependent], RuleVersion{Key: rule.Key, UID: rule.UID, Generation: rule.Generation, Version: rule.Dependent.Version, Epoch: r.liveEpoch(rule)})
			if paths[dependent] == nil {
				paths[dependent] = map[schema.GroupResource][]fieldpath.Path{}
			}
			for gvr, p := range rule.ByTarget {
				paths[dependent][gvr.GroupResource()] = append(paths[dependent][gvr.GroupResource()], p.Paths...)
				// Any version a rule names serves the same objects; the
				// smallest keeps the choice stable.
				if v, ok := targetVersions[gvr.GroupResource()]; !ok || gvr.Version < v {
					targetVersions[gvr.GroupResource()] = gvr.Version
				}
			}
		}
		for gvr, p := range rule.ByTarget {
			if r.staleTargets[gvr.GroupResource()] {
				lists[gvr.GroupResource()] = append(lists[gvr.GroupResource()], p)
			}
		}
	}
	for gr := range r.staleTargets {
		list := lists[gr]
		sort.Slice(list, func(i, j int) bool { return list[i].Rule < list[j].Rule })
		if len(list) == 0 {
			delete(r.byTarget, gr)
		} else {
			r.byTarget[gr] = list
		}
	}
	for dependent := range r.staleDependents {
		if len(versions[dependent]) == 0 {
			delete(r.byDependent, dependent)
			continue
		}
		byTarget := paths[dependent]
		targets := make([]schema.GroupResource, 0, len(byTarget))
		for gr := range byTarget {
			targets = append(targets, gr)
		}
		sort.Slice(targets, func(i, j int) bool { return targets[i].String() < targets[j].String() })
		refs := make([]Reference, 0, len(targets))
		for _, gr := range targets {
			refs = append(refs, Reference{Target: gr, Version: targetVersions[gr], Paths: byTarget[gr]})
		}
		r.byDependent[dependent] = NewSchema(versions[dependent], refs)
	}
	clear(r.staleTargets)
	clear(r.staleDependents)
}

// IndexSchema returns the reference index schema of a dependent type: no
// stamp when no rule is over it.
func (r *Registry) IndexSchema(dependent schema.GroupResource) Schema {
	var s Schema
	r.read(func() { s = r.byDependent[dependent] })
	return s
}

// Protections returns the protections of a resource in a stable order. The
// returned slice must not be modified.
func (r *Registry) Protections(target schema.GroupVersionResource) []Protection {
	var list []Protection
	r.read(func() { list = r.byTarget[target.GroupResource()] })
	return list
}

// Targets returns the protected resources, each once (at the smallest
// version a rule names: any serves the same objects), sorted.
func (r *Registry) Targets() []schema.GroupVersionResource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	versions := map[schema.GroupResource]string{}
	for _, rule := range r.rules {
		for gvr := range rule.ByTarget {
			if v, ok := versions[gvr.GroupResource()]; !ok || gvr.Version < v {
				versions[gvr.GroupResource()] = gvr.Version
			}
		}
	}
	out := make([]schema.GroupVersionResource, 0, len(versions))
	for gr, v := range versions {
		out = append(out, gr.WithVersion(v))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// TargetExports returns the APIExports that the rules over target name as
// serving it, each once, sorted.
func (r *Registry) TargetExports(target schema.GroupResource) []v1alpha1.APIExportRef {
	var out []v1alpha1.APIExportRef
	r.read(func() {
		for _, p := range r.byTarget[target] {
			for _, e := range p.TargetExports {
				if !slices.Contains(out, e) {
					out = append(out, e)
				}
			}
		}
	})
	slices.SortFunc(out, func(a, b v1alpha1.APIExportRef) int { return strings.Compare(a.Path+"/"+a.Name, b.Path+"/"+b.Name) })
	return out
}

// Get returns the rule under key.
func (r *Registry) Get(key string) (*Rule, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rule, ok := r.rules[key]
	return rule, ok
}

// Len is the number of rules.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.rules)
}

// Keys returns the keys of all rules, sorted.
func (r *Registry) Keys() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	keys := make([]string, 0, len(r.rules))
	for k := range r.rules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Stamp is the stamp of the rules that protect target (package settle), and
// whether objects may be settled under it: only while the reference index
// configuration of every one of those rules is in place as the controller
// wrote it, since the intents it records are what unsettles an object that
// gains a reference, and while none of them references target at a path
// that writes no index webhook sees may set (settle.WrittenUnseen).
func (r *Registry) Stamp(target schema.GroupResource) (stamp string, settleable bool) {
	r.read(func() { stamp, settleable = settle.StampFor(r.protecting(target)) })
	return stamp, settleable
}

// Protecting describes the rules over target as Stamp counts them.
func (r *Registry) Protecting(target schema.GroupResource) []settle.Protecting {
	var ps []settle.Protecting
	r.read(func() { ps = r.protecting(target) })
	return ps
}

// protecting describes the rules over target as a stamp counts them; the
// caller holds the read lock.
func (r *Registry) protecting(target schema.GroupResource) []settle.Protecting {
	var ps []settle.Protecting
	for _, p := range r.byTarget[target] {
		rule := r.rules[p.Rule]
		if rule == nil {
			continue
		}
		unseen := false
		for _, path := range p.Paths {
			unseen = unseen || settle.WrittenUnseen(path)
		}
		ps = append(ps, settle.Protecting{
			Rule:   settle.RuleRef{Key: rule.Key, UID: rule.UID, Generation: rule.Generation, IndexEpoch: rule.IndexEpoch},
			Live:   r.liveEpoch(rule) != "",
			Unseen: unseen,
		})
	}
	return ps
}
