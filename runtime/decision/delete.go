package decision

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// validateDelete decides the DELETE of a protected object.
func (v *Validator) validateDelete(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	if err := v.rules.Decidable(ctx, admission.ScopeOf(ctx), admission.Now); err != nil {
		return admission.NotDecidable(err), admission.OutcomeNotInitialized
	}

	d, err := admission.DeletionOf(req)
	if err != nil {
		v.log.Info("cannot decide", "resource", d.Resource.String(), "error", err.Error())
		return admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error()), admission.OutcomeBadRequest
	}
	log := v.log.WithValues("resource", d.Resource.String(), "cluster", d.Cluster, "namespace", d.Namespace, "name", d.Name, "user", d.User)

	skipIgnored := false
	if d.Meta.Annotations[v1alpha1.SkipProtectionAnnotation] == "true" {
		if v.maySkip(d.Groups) {
			skipProtectionUses.WithLabelValues(d.Resource.GroupResource().String()).Inc()
			log.Info("deletion allowed by the skip-protection annotation", "annotation", v1alpha1.SkipProtectionAnnotation, "groups", d.Groups)
			if v.opts.Auditor != nil && !d.DryRun {
				v.opts.Auditor.RecordSkip(d)
			}
			return admission.Allow(fmt.Sprintf("%s carries %s=true", d, v1alpha1.SkipProtectionAnnotation)), outcomeSkipped
		}
		skipIgnored = true
		log.Info("skip-protection annotation ignored: the user is in none of the allowed groups", "groups", d.Groups, "allowed", v.opts.SkipProtectionGroups)
	}

	protections := v.protections.Protections(d.Resource)
	if len(protections) == 0 {
		return admission.Allow(""), outcomeAllowed
	}
	if v.opts.Candidates != nil && !d.DryRun {
		// The rest of the namespace may be settled before it follows.
		v.opts.Candidates.Deleted(d.Cluster, d.Resource, d.Namespace)
	}

	ctx, cancel := context.WithTimeout(ctx, v.opts.RequestTimeout)
	defer cancel()
	if d.DryRun {
		ctx = admission.WithoutSideEffects(ctx)
	}
	// The dependents the object's intents name come first: one of them
	// still referencing it decides a denial without reading the others.
	var more int
	blockers := v.recordedBlockers(ctx, d.Cluster, d.Name, protections, d.Meta.Annotations)
	if len(blockers) == 0 {
		blockers, more, err = v.findBlockers(ctx, d.Cluster, d.Namespace, d.Resource.GroupResource(), d.Name, protections)
	}
	if err == nil && len(blockers) == 0 {
		// None stored: a write admitted but not stored yet shows only as
		// the intent it recorded on this very revision of the object.
		blockers, err = v.pendingBlockers(ctx, d.Cluster, d.Name, protections, d.Meta.Annotations)
		if err == nil && len(blockers) == 0 {
			return admission.Allow(""), outcomeAllowed
		}
	}
	// A workspace that is being deleted must be able to finish: its
	// contents go away together, whatever references what. This holds
	// also when the dependents could not be read (a narrowed read grant, a
	// type whose binding is going away): only the workspace's own state
	// decides, so its teardown never waits on reads that fail.
	if terminating, terr := v.finder.Terminating(ctx, d.Cluster); terr == nil && terminating {
		log.Info("deletion allowed: the workspace is being deleted")
		return admission.Allow("the workspace is being deleted"), outcomeAllowed
	}
	if err != nil {
		log.Error(err, "looking up dependents failed")
		return admission.Deny(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			fmt.Sprintf("cannot delete %s: checking for dependents failed, so protection refuses the deletion: %v", d, err)), admission.OutcomeError
	}
	log.Info("deletion denied", "blockers", len(blockers)+more)
	// A cluster-scoped object may be referenced from several namespaces:
	// then the denial says which namespace each dependent is in.
	msg := denialMessage(d.String(), blockers, more, d.Namespace == "")
	if skipIgnored {
		msg += fmt.Sprintf(" (the %s annotation is ignored: only members of %s may use it)", v1alpha1.SkipProtectionAnnotation, strings.Join(v.opts.SkipProtectionGroups, ", "))
	}
	return admission.Deny(http.StatusForbidden, metav1.StatusReasonForbidden, msg), outcomeDenied
}

// maySkip reports whether a user in groups may use the skip-protection
// annotation: anyone, unless SkipProtectionGroups names who may.
func (v *Validator) maySkip(groups []string) bool {
	if len(v.opts.SkipProtectionGroups) == 0 {
		return true
	}
	for _, g := range groups {
		if slices.Contains(v.opts.SkipProtectionGroups, g) {
			return true
		}
	}
	return false
}

// byDependent merges the protections that share a dependent resource into
// one whose paths are all of theirs: a dependent blocks when any rule's path
// references the object, and one read of the dependents answers for every
// rule, however many protect the same type.
func byDependent(protections []registry.Protection) []registry.Protection {
	// Linear in the rules: a type can have a thousand rules over it, and
	// this runs on every protected DELETE.
	var merged []registry.Protection
	type seen struct {
		rules []string
		paths map[string]bool
	}
	var state []seen
	at := map[schema.GroupVersionResource]int{}
	for _, p := range protections {
		i, ok := at[p.Dependent]
		if !ok {
			i = len(merged)
			at[p.Dependent] = i
			merged = append(merged, registry.Protection{Dependent: p.Dependent, DependentKind: p.DependentKind})
			state = append(state, seen{paths: map[string]bool{}})
		}
		m, st := &merged[i], &state[i]
		if m.Since.IsZero() || p.Since.Before(m.Since) {
			m.Since = p.Since
		}
		st.rules = append(st.rules, p.Rule)
		for _, uid := range p.RuleUIDs {
			if !slices.Contains(m.RuleUIDs, uid) {
				m.RuleUIDs = append(m.RuleUIDs, uid)
			}
		}
		for _, path := range p.Paths {
			if !st.paths[path.String()] {
				st.paths[path.String()] = true
				m.Paths = append(m.Paths, path)
			}
		}
		for _, e := range p.DependentExports {
			if !slices.Contains(m.DependentExports, e) {
				m.DependentExports = append(m.DependentExports, e)
			}
		}
	}
	for i := range merged {
		merged[i].Rule = strings.Join(state[i].rules, ", ")
	}
	return merged
}

// findBlockers looks up the dependents of each protected type concurrently
// and merges what they find in a stable order.
func (v *Validator) findBlockers(ctx context.Context, cluster, namespace string, target schema.GroupResource, name string, protections []registry.Protection) ([]Blocker, int, error) {
	protections = byDependent(protections)
	type result struct {
		blockers []Blocker
		more     int
		err      error
	}
	results := make([]result, len(protections))
	var wg sync.WaitGroup
	for i, p := range protections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, more, err := v.finder.FindBlockers(ctx, cluster, namespace, target, name, p, v.opts.MaxBlockersReported)
			if err != nil {
				err = fmt.Errorf("listing %s for rule %s: %w", p.Dependent.GroupResource(), p.Rule, err)
			}
			results[i] = result{b, more, err}
		}()
	}
	wg.Wait()
	seen := map[Blocker]bool{}
	var all []Blocker
	more := 0
	var errs []error
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		if r.more < 0 || more < 0 {
			more = -1
		} else {
			more += r.more
		}
		for _, b := range r.blockers {
			if !seen[b] {
				seen[b] = true
				all = append(all, b)
			}
		}
	}
	// Any blocker found is a definite answer even if another lookup failed.
	if len(all) == 0 && len(errs) > 0 {
		return nil, 0, errors.Join(errs...)
	}
	sortBlockers(all)
	if len(all) > v.opts.MaxBlockersReported {
		if more >= 0 {
			more += len(all) - v.opts.MaxBlockersReported
		}
		all = all[:v.opts.MaxBlockersReported]
	}
	return all, more, nil
}

func denialMessage(target string, blockers []Blocker, more int, withNamespaces bool) string {
	names := make([]string, len(blockers))
	for i, b := range blockers {
		names[i] = b.String()
		if withNamespaces && b.Namespace != "" {
			names[i] += " in namespace " + b.Namespace
		}
	}
	msg := fmt.Sprintf("cannot delete %s: still referenced by %s", target, strings.Join(names, ", "))
	switch {
	case more < 0:
		msg += " and more"
	case more > 0:
		msg += fmt.Sprintf(" and %d more", more)
	}
	return msg
}
