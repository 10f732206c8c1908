package controller

import (
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"

	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

func decodeRule(o process.ShardObject) (*v1alpha1.DependencyRule, error) {
	rule := &v1alpha1.DependencyRule{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, rule); err != nil {
		return nil, fmt.Errorf("decoding DependencyRule %s/%s: %w", o.Cluster, o.Obj.GetName(), err)
	}
	return rule, nil
}

// ruleInput turns a rule read through the virtual workspace (or the error
// decoding it) into planning input. A rule that the schema let through but
// that still cannot be acted on (an unparseable object, say) is marked
// invalid rather than skipped, so its status says so.
func ruleInput(key string, rule *v1alpha1.DependencyRule, err error) RuleInput {
	in := RuleInput{Key: key}
	if err != nil {
		in.Invalid = err.Error()
		return in
	}
	if errs := rule.Validate(); len(errs) > 0 {
		in.Invalid = errs.ToAggregate().Error()
		return in
	}
	in = specInput(in.Key, rule.Spec)
	in.UID, in.Generation, in.IndexEpoch = string(rule.UID), rule.Generation, rule.Status.IndexEpoch
	return in
}

// specInput is the planning input for a valid spec of the rule key.
func specInput(key string, spec v1alpha1.DependencyRuleSpec) RuleInput {
	d := spec.Dependent
	in := RuleInput{
		Key:             key,
		Dependent:       schema.GroupVersionResource{Group: d.Group, Version: d.Version, Resource: d.Resource},
		DependentKind:   d.Kind,
		DependentExport: d.APIExportName,
	}
	for _, dep := range spec.Dependencies {
		in.Dependencies = append(in.Dependencies, DependencyInput{
			ExportPath: dep.APIExportRef.Path,
			ExportName: dep.APIExportRef.Name,
			GVR:        schema.GroupVersionResource{Group: dep.Group, Version: dep.Version, Resource: dep.Resource},
			FieldPath:  dep.FieldRef.Path,
		})
	}
	return in
}

// spec is the spec r was made from (specInput), for the checks of the
// rule's API.
func (r RuleInput) spec() v1alpha1.DependencyRuleSpec {
	spec := v1alpha1.DependencyRuleSpec{Dependent: v1alpha1.Dependent{
		APIExportName: r.DependentExport,
		Group:         r.Dependent.Group,
		Version:       r.Dependent.Version,
		Kind:          r.DependentKind,
		Resource:      r.Dependent.Resource,
	}}
	for _, d := range r.Dependencies {
		spec.Dependencies = append(spec.Dependencies, v1alpha1.Dependency{
			APIExportRef: v1alpha1.APIExportRef{Path: d.ExportPath, Name: d.ExportName},
			Group:        d.GVR.Group,
			Version:      d.GVR.Version,
			Resource:     d.GVR.Resource,
			FieldRef:     v1alpha1.FieldRef{Path: d.FieldPath},
		})
	}
	return spec
}

// statusWrite is the status of one rule to write.
type statusWrite struct {
	o              process.ShardObject
	decoded        decodedRule
	plan           *RulePlan
	eventsAccepted bool
}

// writeStatuses writes the statuses, several at a time.
func (s *Syncer) writeStatuses(ctx context.Context, writes []statusWrite) error {
	keys := make(map[string]bool, len(writes))
	for _, w := range writes {
		keys[w.o.Cluster+"/"+w.o.Obj.GetName()] = true
	}
	s.generations.keep(keys)
	errs := make([]error, len(writes))
	concurrently(len(writes), func(i int) {
		w := writes[i]
		errs[i] = s.writeStatus(ctx, w.o, w.decoded, w.plan, w.eventsAccepted)
	})
	return errors.Join(errs...)
}

// writeStatus sets the conditions the controller owns and the Ready summary,
// leaving the webhook's Enforced condition as the webhook wrote it. It
// writes only when something changed, and then records the Events the
// change warrants.
func (s *Syncer) writeStatus(ctx context.Context, o process.ShardObject, decoded decodedRule, rp *RulePlan, eventsAccepted bool) error {
	if decoded.err != nil {
		return decoded.err
	}
	rule := decoded.rule.DeepCopy()
	before := rule.Status.DeepCopy()
	gen := rule.Generation
	setCondition(&rule.Status.Conditions, v1alpha1.ConditionWorkspacesResolved, rp.Resolved, gen)
	if !keepVerdict(rule, v1alpha1.ConditionTypesServed, rp.Served) {
		setCondition(&rule.Status.Conditions, v1alpha1.ConditionTypesServed, rp.Served, gen)
	}
	setCondition(&rule.Status.Conditions, v1alpha1.ConditionWebhookInstalled, rp.Installed, gen)
	setCondition(&rule.Status.Conditions, v1alpha1.ConditionAcyclic, rp.Acyclic, gen)
	setCondition(&rule.Status.Conditions, v1alpha1.ConditionIndexed, rp.Indexed, gen)
	ready := readiness(rule)
	if ready.OK && rp.Bridged != "" {
		ready = Outcome{Reason: "Settling", Message: fmt.Sprintf("objects of %s settled before this rule skip the webhook until the webhook has proven them under it "+
			"(its --settle-after and a sweep, then it stops accepting the stamp they were settled under): the rule protects them from then on", rp.Bridged)}
	}
	if ready.OK {
		was := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionReady)
		reported := was != nil && was.Status == metav1.ConditionTrue && was.ObservedGeneration == gen
		if wait := s.generations.wait(o.Cluster+"/"+rule.Name, rule.UID, gen, reported, time.Now()); wait > 0 {
			ready = Outcome{Reason: "NotYetEnforced", Message: fmt.Sprintf("the webhook enforces generation %d; waiting until every webhook replica decides writes on it (%s after it was seen)", gen, v1alpha1.RuleReadMaxAge)}
			time.AfterFunc(wait, s.Trigger)
		}
	}
	setCondition(&rule.Status.Conditions, v1alpha1.ConditionReady, ready, gen)
	rule.Status.ObservedGeneration = gen
	rule.Status.IndexEpoch = rp.IndexEpoch
	if statusEqual(before, &rule.Status) {
		return nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rule)
	if err != nil {
		return err
	}
	c, err := s.VW.Client(o.URL, o.Cluster)
	if err != nil {
		return err
	}
	_, err = c.Resource(v1alpha1.GroupVersionResource).UpdateStatus(ctx, &unstructured.Unstructured{Object: m}, metav1.UpdateOptions{FieldManager: "depctrl-controller"})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// Changed or gone since the read: the watch brings another run.
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing status of DependencyRule %s: %w", o.Obj.GetName(), err)
	}
	if log := s.Log.V(1); log.Enabled() {
		log.Info("status written", "rule", o.Cluster+"/"+o.Obj.GetName(), "changed", changedConditions(before, &rule.Status))
	}
	if evs := ruleEvents(before.Conditions, rule.Status.Conditions); len(evs) > 0 {
		// Events do not hold the run: they are a courtesy on top of the
		// status just written, and each is a write of its own.
		go func() {
			s.eventWriters <- struct{}{}
			defer func() { <-s.eventWriters }()
			s.recordEvents(context.WithoutCancel(ctx), o, rule, evs, eventsAccepted)
		}()
	}
	return nil
}

// changedConditions names the conditions that differ between two statuses,
// each as type=status/reason, for the debug log of a status write.
func changedConditions(before, after *v1alpha1.DependencyRuleStatus) []string {
	var out []string
	for _, c := range after.Conditions {
		b := meta.FindStatusCondition(before.Conditions, c.Type)
		if b == nil || !conditionEqual(*b, c) {
			out = append(out, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
		}
	}
	return out
}

// readiness summarizes the other conditions: Ready only when the workspaces
// resolved, the exports serve every type the rule names, the webhook is
// installed, the reference index is, the webhook enforces this generation
// and no cycle makes objects undeletable. A rule whose types are not served
// protects nothing, so it is never Ready, installed or not. Nor is one
// without its reference index: deletes are decided all the same, but only
// the index webhook sees the dependents' writes and records their intents,
// so without it a deletion decided while a write is admitted and not yet
// stored misses that write, and its reference dangles.
func readiness(rule *v1alpha1.DependencyRule) Outcome {
	for _, t := range []string{v1alpha1.ConditionWorkspacesResolved, v1alpha1.ConditionTypesServed, v1alpha1.ConditionWebhookInstalled, v1alpha1.ConditionIndexed, v1alpha1.ConditionAcyclic} {
		c := meta.FindStatusCondition(rule.Status.Conditions, t)
		if c == nil || c.Status != metav1.ConditionTrue {
			if c == nil {
				return Outcome{Reason: "Pending", Message: t + " is not known yet"}
			}
			return Outcome{Reason: c.Reason, Message: c.Message}
		}
	}
	e := meta.FindStatusCondition(rule.Status.Conditions, v1alpha1.ConditionEnforced)
	switch {
	case e == nil:
		return Outcome{Reason: "NotYetEnforced", Message: "waiting for the webhook to register the rule"}
	case e.Status != metav1.ConditionTrue:
		return Outcome{Reason: e.Reason, Message: e.Message}
	case e.ObservedGeneration != rule.Generation:
		return Outcome{Reason: "NotYetEnforced", Message: fmt.Sprintf("the webhook enforces generation %d; waiting for generation %d", e.ObservedGeneration, rule.Generation)}
	}
	return Outcome{OK: true, Reason: "Ready", Message: "the rule is installed and enforced"}
}

// keepVerdict reports whether o, an outcome that may pass, leaves the
// rule's condition t as it is: it does when the condition holds a True or
// False verdict for the rule's current generation.
func keepVerdict(rule *v1alpha1.DependencyRule, t string, o Outcome) bool {
	if !o.Keep {
		return false
	}
	c := meta.FindStatusCondition(rule.Status.Conditions, t)
	return c != nil && c.ObservedGeneration == rule.Generation && c.Status != metav1.ConditionUnknown
}

func setCondition(conds *[]metav1.Condition, t string, o Outcome, gen int64) {
	status := metav1.ConditionFalse
	switch {
	case o.OK:
		status = metav1.ConditionTrue
	case o.Unknown:
		status = metav1.ConditionUnknown
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: t, Status: status, Reason: o.Reason, Message: o.Message, ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(time.Now())})
}

func statusEqual(a, b *v1alpha1.DependencyRuleStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.IndexEpoch != b.IndexEpoch || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for _, ca := range a.Conditions {
		cb := meta.FindStatusCondition(b.Conditions, ca.Type)
		if cb == nil || !conditionEqual(*cb, ca) {
			return false
		}
	}
	return true
}

// conditionEqual reports whether two conditions say the same: their
// transition times aside, which a rewrite of an unchanged condition keeps.
func conditionEqual(a, b metav1.Condition) bool {
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration
}

func ptrUID(u *unstructured.Unstructured) *types.UID {
	uid := u.GetUID()
	return &uid
}

// ruleChanged reports whether an update of a rule can change a run's
// outcome: a new generation (the spec), the start of its deletion, or the
// webhook's Enforced condition, which Ready follows. The controller's own
// status writes are none of these, so they do not start another run.
func ruleChanged(old, updated *unstructured.Unstructured) bool {
	if old.GetGeneration() != updated.GetGeneration() || (old.GetDeletionTimestamp() == nil) != (updated.GetDeletionTimestamp() == nil) {
		return true
	}
	return enforced(old) != enforced(updated)
}

// enforced is the Enforced condition of a rule, as status and generation.
func enforced(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		if m["type"] == v1alpha1.ConditionEnforced {
			return fmt.Sprintf("%v/%v", m["status"], m["observedGeneration"])
		}
	}
	return ""
}
