package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// planRepair turns the plan of a rule that waits for enforcement, and that
// the controller reports as not enforced (refresh read `ready = false`
// beside conditions, such as while the controller has lost a grant it
// needs), into an update that plans `ready = true`: apply then waits until
// the rule is enforced again, as a create does. So an apply that restores
// what protection depends on (a grant, a shard's RBAC) returns when
// protection is back, and the plan says that it will wait, and for which
// rules. A rule whose spec changes is updated and waited for anyway; one
// that does not wait for enforcement is left as it is, and so is one
// without any condition: no controller has looked at it (none runs, or it
// serves another export), and waiting would not change that.
//
// The conditions are planned unknown: the update rereads them.
func planRepair(ctx context.Context, state, plan *ruleModel, resp *resource.ModifyPlanResponse) {
	if !needsRepair(state, plan) {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("ready"), types.BoolValue(true))...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("conditions"), types.MapUnknown(types.StringType))...)
}

// needsRepair reports whether the rule in state is reported not enforced
// while the plan keeps it, waiting for enforcement, with `ready` carried
// over from state (not already to be recomputed).
func needsRepair(state, plan *ruleModel) bool {
	if state == nil || plan == nil {
		return false
	}
	if state.Ready.IsNull() || state.Ready.IsUnknown() || state.Ready.ValueBool() {
		return false
	}
	if state.Conditions.IsNull() || state.Conditions.IsUnknown() || len(state.Conditions.Elements()) == 0 {
		return false
	}
	if plan.WaitForEnforcement.IsUnknown() || !plan.WaitForEnforcement.ValueBool() {
		return false
	}
	return !plan.Ready.IsUnknown()
}
