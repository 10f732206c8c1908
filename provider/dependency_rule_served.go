package provider

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

var _ resource.ResourceWithModifyPlan = &dependencyRuleResource{}

// planReadTimeout bounds the reads of exports at plan.
const planReadTimeout = 15 * time.Second

// notServedSummary heads the diagnostics of a rule whose types the exports
// do not serve.
const notServedSummary = "DependencyRule names a type that is not served"

// servedSummary heads the diagnostic of a problem of the given reason
// (v1alpha1.DependencyRuleSpec.CheckServed). A path in what a subresource
// writes names a served type; what is wrong is where it looks.
func servedSummary(reason string) string {
	if reason == v1alpha1.ReasonFieldPathInSubresource {
		return "DependencyRule references a field that a subresource writes"
	}
	return notServedSummary
}

// ModifyPlan records what this plan does with the rule, for the cycle
// checks of the others, plans the repair of a rule no longer enforced
// (planRepair), and checks a new rule, or one whose types or field paths
// change (not one that only changes defer_deletion), with the
// provider's own credentials, as the controller would: against the exports
// it names, as they are now (TypesServed), so that a rule that would
// protect nothing fails the plan with the attribute named; and against
// every other rule of the installation, in kcp and in this plan (Acyclic),
// so that a rule that would close a dependency cycle fails the plan on the
// dependency that closes it (checkCycles). Whatever the provider cannot
// read (values not known yet, an export or rules that do not exist yet or
// that it may not read) is left to the controller, and apply reports it.
func (r *dependencyRuleResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.conn == nil {
		return
	}
	var before *plannedRule
	var state ruleModel
	if !req.State.Raw.IsNull() {
		state, _ = getModel[ruleModel](ctx, req.State, &resp.Diagnostics)
		b := plannedRuleOf(&state)
		before = &b
	}
	if req.Plan.Raw.IsNull() {
		r.conn.rulePlans.plan(before, nil)
		return
	}
	plan, ok := getModel[ruleModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok || plan.Name.IsUnknown() {
		return
	}
	after := plannedRuleOf(&plan)
	r.conn.rulePlans.plan(before, &after)
	if before != nil {
		planRepair(ctx, &state, &plan, resp)
	}
	if plan.Dependent == nil || len(plan.Dependencies) == 0 || plan.WorkspacePath.IsUnknown() {
		return
	}
	spec, unknown := plan.spec()
	// The checks read the types and field paths only: deferDeletion, known
	// or not, neither skips them nor, changed alone, repeats them.
	delete(unknown, deferDeletionField)
	if len(unknown) > 0 || len(plan.object().Validate()) > 0 {
		return
	}
	if before != nil {
		if was, _ := state.spec(); reflect.DeepEqual(checkedSpec(was), checkedSpec(spec)) {
			// Unchanged: its TypesServed and Acyclic conditions say how
			// it stands.
			return
		}
	}
	ws := plan.WorkspacePath.ValueString()
	// A plan does not wait long on reads that only add a check.
	ctx, cancel := context.WithTimeout(ctx, planReadTimeout)
	defer cancel()
	read := r.exportsAtPlan(ctx)
	deps := make([]*v1alpha1.ExportTypes, len(spec.Dependencies))
	for i, d := range spec.Dependencies {
		deps[i] = read(d.APIExportRef.Path, d.APIExportRef.Name)
	}
	problems := spec.CheckServed(read(ws, spec.Dependent.APIExportName), deps)
	for _, p := range problems {
		ap := attributePath(p.Field)
		resp.Diagnostics.AddAttributeError(ap, servedSummary(p.Reason), fmt.Sprintf(
			"%s: %s (%s). Checked at plan against the export as it is now; if this apply also changes the export, apply that change first.",
			ap, p.Detail, p.Reason))
	}
	r.checkCycles(ctx, after, &resp.Diagnostics)
}

// checkedSpec is spec as the plan-time checks read it: without
// deferDeletion, which decides nothing they check.
func checkedSpec(spec v1alpha1.DependencyRuleSpec) v1alpha1.DependencyRuleSpec {
	spec.DeferDeletion = false
	return spec
}

// exportsAtPlan reads exports with the provider's credentials, each once
// per plan of this rule and at most every few seconds for all the rules
// the provider plans (process.ExportCache); nil for any it cannot read.
func (r *dependencyRuleResource) exportsAtPlan(ctx context.Context) func(path, name string) *v1alpha1.ExportTypes {
	seen := map[[2]string]*v1alpha1.ExportTypes{}
	return func(path, name string) *v1alpha1.ExportTypes {
		key := [2]string{path, name}
		if t, ok := seen[key]; ok {
			return t
		}
		var t *v1alpha1.ExportTypes
		client, err := r.conn.Dynamic(path)
		if err == nil {
			t, err = r.conn.exports.Read(ctx, client, path, name)
		}
		if err != nil {
			tflog.Debug(ctx, "not checking the rule against an export at plan", map[string]interface{}{"workspace": path, "export": name, "error": err.Error()})
		}
		seen[key] = t
		return t
	}
}

// servedFailure returns the rule's TypesServed condition when it is False
// for the rule's generation, nil otherwise.
func servedFailure(rule *v1alpha1.DependencyRule) *metav1.Condition {
	c := meta.FindStatusCondition(rule.Status.Conditions, v1alpha1.ConditionTypesServed)
	if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != rule.Generation {
		return nil
	}
	return c
}

// fieldProblem finds each "spec.<field>: <detail>" in a condition message.
var fieldProblem = regexp.MustCompile(`(?:^|; )(spec\.[A-Za-z0-9_.\[\]]+): `)

// addServedDiagnostics reports a TypesServed failure on the attributes its
// message names, or on the rule as a whole when it names none.
func addServedDiagnostics(c *metav1.Condition, diags *diagnostics) {
	matches := fieldProblem.FindAllStringSubmatchIndex(c.Message, -1)
	if len(matches) == 0 {
		diags.AddError("DependencyRule not enforced", fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		return
	}
	for i, m := range matches {
		end := len(c.Message)
		if i+1 < len(matches) {
			end = matches[i+1][0]
		}
		ap := attributePath(c.Message[m[2]:m[3]])
		diags.AddAttributeError(ap, "DependencyRule not enforced", fmt.Sprintf("%s %s: %s: %s", c.Type, c.Reason, ap, c.Message[m[1]:end]))
	}
}
