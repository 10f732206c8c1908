package decision

import (
	"context"
	"encoding/json"
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

	obj, err := decodeObject(req)
	if err != nil {
		v.log.Info("cannot decide", "resource", req.Resource.String(), "error", err.Error())
		return admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error()), admission.OutcomeBadRequest
	}
	meta := admission.MetaOf(obj)
	if req, err = identify(req, meta); err != nil {
		v.log.Info("cannot decide", "resource", req.Resource.String(), "error", err.Error())
		return admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error()), admission.OutcomeBadRequest
	}
	log := v.log.WithValues("resource", req.Resource.String(), "namespace", req.Namespace, "name", req.Name, "user", req.UserInfo.Username)
	target := describe(req)

	skipIgnored := false
	if meta.Annotations[v1alpha1.SkipProtectionAnnotation] == "true" {
		if v.maySkip(req.UserInfo.Groups) {
			skipProtectionUses.WithLabelValues(schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource}.String()).Inc()
			log.Info("deletion allowed by the skip-protection annotation", "annotation", v1alpha1.SkipProtectionAnnotation, "groups", req.UserInfo.Groups)
			if cluster, err := admission.ClusterOf(req, admission.Annotations{OldObject: meta.Annotations}); err == nil && v.opts.Auditor != nil && !admission.DryRun(req) {
				v.opts.Auditor.RecordSkip(cluster, req, meta)
			}
			return admission.Allow(fmt.Sprintf("%s carries %s=true", target, v1alpha1.SkipProtectionAnnotation)), outcomeSkipped
		}
		skipIgnored = true
		log.Info("skip-protection annotation ignored: the user is in none of the allowed groups", "groups", req.UserInfo.Groups, "allowed", v.opts.SkipProtectionGroups)
	}

	protections := v.protections.Protections(schema.GroupVersionResource(req.Resource))
	if len(protections) == 0 {
		return admission.Allow(""), outcomeAllowed
	}
	cluster, err := admission.ClusterOf(req, admission.Annotations{OldObject: meta.Annotations})
	if err != nil {
		log.Info("cannot decide: no logical cluster", "error", err.Error())
		return admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("cannot check %s for dependents: %v", target, err)), admission.OutcomeBadRequest
	}
	if v.opts.Candidates != nil && !admission.DryRun(req) {
		// The rest of the namespace may be settled before it follows.
		v.opts.Candidates.Candidate(cluster, req)
	}

	ctx, cancel := context.WithTimeout(ctx, v.opts.RequestTimeout)
	defer cancel()
	if admission.DryRun(req) {
		ctx = admission.WithoutSideEffects(ctx)
	}
	targetGR := schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource}
	// The dependents the object's intents name come first: one of them
	// still referencing it decides a denial without reading the others.
	var more int
	blockers := v.recordedBlockers(ctx, cluster, req.Name, protections, meta.Annotations)
	if len(blockers) == 0 {
		blockers, more, err = v.findBlockers(ctx, cluster, req.Namespace, targetGR, req.Name, protections)
	}
	if err == nil && len(blockers) == 0 {
		// None stored: a write admitted but not stored yet shows only as
		// the intent it recorded on this very revision of the object.
		blockers, err = v.pendingBlockers(ctx, cluster, req.Name, protections, meta.Annotations)
		if err == nil && len(blockers) == 0 {
			return admission.Allow(""), outcomeAllowed
		}
	}
	// A workspace that is being deleted must be able to finish: its
	// contents go away together, whatever references what. This holds
	// also when the dependents could not be read (a narrowed read grant, a
	// type whose binding is going away): only the workspace's own state
	// decides, so its teardown never waits on reads that fail.
	if terminating, terr := v.finder.Terminating(ctx, cluster); terr == nil && terminating {
		log.Info("deletion allowed: the workspace is being deleted", "cluster", cluster)
		return admission.Allow("the workspace is being deleted"), outcomeAllowed
	}
	if err != nil {
		log.Error(err, "looking up dependents failed", "cluster", cluster)
		return admission.Deny(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			fmt.Sprintf("cannot delete %s: checking for dependents failed, so protection refuses the deletion: %v", target, err)), admission.OutcomeError
	}
	log.Info("deletion denied", "cluster", cluster, "blockers", len(blockers)+more)
	// A cluster-scoped object may be referenced from several namespaces:
	// then the denial says which namespace each dependent is in.
	msg := denialMessage(target, blockers, more, req.Namespace == "")
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

// identify returns req naming the object it deletes. A DELETECOLLECTION
// (a field or label selector, a whole collection, a namespace being emptied,
// an APIBinding being removed) reaches admission once per item with an empty
// name, and without a namespace when it spans namespaces: the item itself,
// in oldObject, then says which object is deleted. A request whose name
// disagrees with its object is malformed.
func identify(req *admissionv1.AdmissionRequest, meta metav1.ObjectMeta) (*admissionv1.AdmissionRequest, error) {
	if meta.Name == "" {
		return req, fmt.Errorf("cannot check %s for dependents: the deleted object has no metadata.name", describe(req))
	}
	if (req.Name != "" && req.Name != meta.Name) || (req.Namespace != "" && req.Namespace != meta.Namespace) {
		return req, fmt.Errorf("cannot check %s for dependents: the request names %s but its object is %s",
			describe(req), qualified(req.Namespace, req.Name), qualified(meta.Namespace, meta.Name))
	}
	if req.Name == meta.Name && req.Namespace == meta.Namespace {
		return req, nil
	}
	named := *req
	named.Name, named.Namespace = meta.Name, meta.Namespace
	return &named, nil
}

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func describe(req *admissionv1.AdmissionRequest) string {
	return req.Resource.Resource + "/" + req.Name
}

func decodeObject(req *admissionv1.AdmissionRequest) (map[string]interface{}, error) {
	raw := req.OldObject.Raw
	if len(raw) == 0 {
		return nil, fmt.Errorf("cannot check %s for dependents: the DELETE request carries no object", describe(req))
	}
	obj := map[string]interface{}{}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("cannot check %s for dependents: decoding the object: %w", describe(req), err)
	}
	return obj, nil
}
