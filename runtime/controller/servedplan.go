package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// Reasons of the TypesServed condition when the check cannot be made.
const (
	ReasonTypesServed           = "TypesServed"
	ReasonTypesClaimNotAccepted = "ClaimNotAccepted"
	ReasonExportReadFailed      = "ReadFailed"
)

// planServed checks rule r against the exports it names
// (v1alpha1.DependencyRuleSpec.CheckServed). clusters[i] is the logical
// cluster dependency i resolved to, "" when it did not. What cannot be
// read is reported Unknown, never as a verdict; a read failure also sets
// Keep, so that a verdict already reached for the rule's generation stands
// until a read succeeds again.
func planServed(ctx context.Context, r RuleInput, clusters []string, bindings map[string]Binding, exports ExportFunc) Outcome {
	var problems []v1alpha1.ServedProblem
	var pending []Outcome
	get := func(cluster, name, nameField, where string) *v1alpha1.ExportTypes {
		b, bound := bindings[cluster]
		switch {
		case !bound:
			pending = append(pending, Outcome{Reason: "ExportNotBound", Message: fmt.Sprintf(
				"%s has not bound the dep-ctrl APIExport, so the controller cannot read APIExport %s there", where, name)})
			return nil
		case !b.TypesClaimAccepted:
			pending = append(pending, Outcome{Reason: ReasonTypesClaimNotAccepted, Message: fmt.Sprintf(
				"the binding of the dep-ctrl APIExport in %s did not accept its read-only permission claims on apiexports and apiresourceschemas, "+
					"so the controller cannot check what APIExport %s serves; accept them (depctrl_provider_binding does)", where, name)})
			return nil
		}
		t, err := exports(ctx, cluster, name)
		switch {
		case errors.Is(err, process.ErrExportNotFound):
			problems = append(problems, v1alpha1.ServedProblem{Reason: v1alpha1.ReasonExportNotFound, Field: nameField, Detail: fmt.Sprintf("%s has no APIExport %s", where, name)})
		case err != nil:
			pending = append(pending, Outcome{Reason: ReasonExportReadFailed, Keep: true, Message: fmt.Sprintf(
				"reading APIExport %s in %s: %v; retrying", name, where, err)})
		}
		return t
	}
	dependent := get(ruleCluster(r.Key), r.DependentExport, "spec.dependent.apiExportName", "this workspace")
	deps := make([]*v1alpha1.ExportTypes, len(r.Dependencies))
	for i, d := range r.Dependencies {
		if i >= len(clusters) || clusters[i] == "" {
			pending = append(pending, Outcome{Reason: "WorkspacesNotResolved", Message: "waiting until every dependency workspace resolves"})
			continue
		}
		deps[i] = get(clusters[i], d.ExportName, fmt.Sprintf("spec.dependencies[%d].apiExportRef.name", i), "workspace "+d.ExportPath)
	}
	spec := r.spec()
	problems = append(problems, spec.CheckServed(dependent, deps)...)
	if len(problems) > 0 {
		msgs := make([]string, 0, len(problems))
		for _, p := range problems {
			msgs = append(msgs, p.String())
		}
		return Outcome{Reason: problems[0].Reason, Message: joinUnique(msgs)}
	}
	if len(pending) > 0 {
		o := Outcome{Unknown: true, Keep: true, Reason: pending[0].Reason}
		msgs := make([]string, 0, len(pending))
		for _, p := range pending {
			o.Keep = o.Keep && p.Keep
			msgs = append(msgs, p.Message)
		}
		o.Message = joinUnique(msgs)
		return o
	}
	return Outcome{OK: true, Reason: ReasonTypesServed, Message: fmt.Sprintf(
		"the exports serve every type the rule names, in the versions it names, and every field path fits the schema of %s %s",
		r.Dependent.GroupResource(), r.Dependent.Version)}
}

// joinUnique joins messages with "; ", each once, in order.
func joinUnique(msgs []string) string {
	seen := map[string]bool{}
	out := msgs[:0:0]
	for _, m := range msgs {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return strings.Join(out, "; ")
}
