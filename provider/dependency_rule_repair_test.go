package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestNeedsRepair: only a rule the controller reports not enforced, kept by
// the plan with wait_for_enforcement and ready carried over, plans a repair.
func TestNeedsRepair(t *testing.T) {
	reported := types.MapValueMust(types.StringType, map[string]attr.Value{"Ready": types.StringValue("False ResolveFailed: forbidden")})
	model := func(ready, wait types.Bool) *ruleModel {
		return &ruleModel{Ready: ready, WaitForEnforcement: wait, Conditions: reported}
	}
	unreported := func(conditions types.Map) *ruleModel {
		m := model(types.BoolValue(false), types.BoolValue(true))
		m.Conditions = conditions
		return m
	}
	yes, no := types.BoolValue(true), types.BoolValue(false)
	unknown, null := types.BoolUnknown(), types.BoolNull()
	for _, tc := range []struct {
		name        string
		state, plan *ruleModel
		want        bool
	}{
		{"reported not enforced, waiting", model(no, yes), model(no, yes), true},
		{"no condition: no controller looked at it", unreported(types.MapValueMust(types.StringType, nil)), model(no, yes), false},
		{"conditions not read", unreported(types.MapNull(types.StringType)), model(no, yes), false},
		{"enforced", model(yes, yes), model(yes, yes), false},
		{"not enforced, not waiting", model(no, no), model(no, no), false},
		{"waiting turned off by this plan", model(no, yes), model(no, no), false},
		{"waiting not known yet", model(no, yes), model(no, unknown), false},
		{"spec changes: ready recomputed anyway", model(no, yes), model(unknown, yes), false},
		{"state without ready", model(null, yes), model(null, yes), false},
		{"create", nil, model(unknown, yes), false},
		{"destroy", model(no, yes), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsRepair(tc.state, tc.plan); got != tc.want {
				t.Errorf("needsRepair = %v, want %v", got, tc.want)
			}
		})
	}
}
