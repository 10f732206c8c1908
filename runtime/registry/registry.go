// Package registry is the webhook's thread-safe index of DependencyRules:
// metadata only, with a reverse index from each protected resource to the
// dependents that may reference it, so a DELETE finds its rules in O(1).
package registry

import (
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/refindex"
)

// Protection is one way a protected object may be referenced: dependents of
// one type, any of whose field paths names it.
type Protection struct {
	// Rule is the rule's key, "<cluster>/<name>".
	Rule          string
	Dependent     schema.GroupVersionResource
	DependentKind string
	Paths         []fieldpath.Path
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
	byDependent map[schema.GroupResource]refindex.Schema
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{rules: map[string]*Rule{}, byTarget: map[schema.GroupResource][]Protection{}, byDependent: map[schema.GroupResource]refindex.Schema{}}
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
			prot = Protection{Rule: key, Dependent: dependent, DependentKind: rule.Spec.Dependent.Kind}
		}
		prot.Paths = append(prot.Paths, p)
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
	r.reindex(old, compiled)
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
	r.reindex(old, nil)
	return old
}

// reindex rebuilds the index entries of every resource old or new
// protects. Deletions are matched by group and resource, whatever version
// the request used, so the index is keyed without the version.
func (r *Registry) reindex(old, new *Rule) {
	touched := map[schema.GroupResource]bool{}
	dependents := map[schema.GroupResource]bool{}
	for _, x := range []*Rule{old, new} {
		if x == nil {
			continue
		}
		dependents[x.Dependent.GroupResource()] = true
		for gvr := range x.ByTarget {
			touched[gvr.GroupResource()] = true
		}
	}
	for gr := range dependents {
		r.reindexDependent(gr)
	}
	for gr := range touched {
		var list []Protection
		for _, rule := range r.rules {
			for gvr, p := range rule.ByTarget {
				if gvr.GroupResource() == gr {
					list = append(list, p)
				}
			}
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Rule < list[j].Rule })
		if len(list) == 0 {
			delete(r.byTarget, gr)
		} else {
			r.byTarget[gr] = list
		}
	}
}

// reindexDependent recomputes the reference index schema of one dependent
// type from every rule over it.
func (r *Registry) reindexDependent(dependent schema.GroupResource) {
	var versions []refindex.RuleVersion
	byTarget := map[schema.GroupResource][]fieldpath.Path{}
	for _, rule := range r.rules {
		if rule.Dependent.GroupResource() != dependent {
			continue
		}
		versions = append(versions, refindex.RuleVersion{Key: rule.Key, UID: rule.UID, Generation: rule.Generation, Version: rule.Dependent.Version, Epoch: rule.IndexEpoch})
		for gvr, p := range rule.ByTarget {
			byTarget[gvr.GroupResource()] = append(byTarget[gvr.GroupResource()], p.Paths...)
		}
	}
	if len(versions) == 0 {
		delete(r.byDependent, dependent)
		return
	}
	targets := make([]schema.GroupResource, 0, len(byTarget))
	for gr := range byTarget {
		targets = append(targets, gr)
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].String() < targets[j].String() })
	refs := make([]refindex.Reference, 0, len(targets))
	for _, gr := range targets {
		refs = append(refs, refindex.Reference{Target: gr, Paths: byTarget[gr]})
	}
	r.byDependent[dependent] = refindex.NewSchema(versions, refs)
}

// IndexSchema returns the reference index schema of a dependent type: no
// stamp when no rule is over it.
func (r *Registry) IndexSchema(dependent schema.GroupResource) refindex.Schema {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byDependent[dependent]
}

// Protections returns the protections of a resource in a stable order. The
// returned slice must not be modified.
func (r *Registry) Protections(target schema.GroupVersionResource) []Protection {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byTarget[target.GroupResource()]
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
