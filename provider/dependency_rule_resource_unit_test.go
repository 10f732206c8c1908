package provider

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

func TestAttributePath(t *testing.T) {
	for field, want := range map[string]string{
		"spec.dependent.apiExportName":           "dependent.api_export_name",
		"spec.dependent.kind":                    "dependent.kind",
		"spec.dependencies":                      "dependency",
		"spec.dependencies[2].fieldRef.path":     "dependency[2].field_ref.path",
		"spec.dependencies[0].apiExportRef.name": "dependency[0].api_export_ref.name",
		"spec.dependencies[11].version":          "dependency[11].version",
		"spec.deferDeletion":                     "defer_deletion",
	} {
		if got := attributePath(field).String(); got != want {
			t.Errorf("%s: got %s, want %s", field, got, want)
		}
	}
}

func TestRuleSpecSkipsUnknownValues(t *testing.T) {
	s := types.StringValue
	m := ruleModel{
		Dependent: &ruleDependentModel{APIExportName: s("compute.example.io"), Group: s("compute.example.io"), Version: s("v1"), Kind: s("VirtualMachine"), Resource: s("virtualmachines")},
		Dependencies: []ruleDependencyModel{{
			APIExportRef: &ruleExportRefModel{Path: types.StringUnknown(), Name: s("network.example.io")},
			Group:        s("network.example.io"), Version: s("v1"), Resource: s("vpcs"),
			FieldRef: &ruleFieldRefModel{Path: s("spec.vpc")},
		}},
	}
	spec, unknown := m.spec()
	var reported []string
	for _, e := range spec.Validate(nil) {
		if !unknown["spec."+e.Field] && !unknown[e.Field] {
			reported = append(reported, e.Field)
		}
	}
	// The unknown path is not reported; the malformed field path is.
	if len(reported) != 1 || reported[0] != "dependencies[0].fieldRef.path" {
		t.Fatalf("reported %v, want only the field path", reported)
	}
}

// TestRuleStateNamesWhatHoldsTheRuleBack: a timeout names every condition
// that holds the rule back, the missing reference index among them.
func TestRuleStateNamesWhatHoldsTheRuleBack(t *testing.T) {
	condition := func(typ, status, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: reason + " message"}
	}
	tests := []struct {
		name  string
		conds []metav1.Condition
		want  string
	}{{
		name: "index missing, webhook propagating",
		conds: []metav1.Condition{
			condition(v1alpha1.ConditionWebhookInstalled, "False", "Propagating"),
			condition(v1alpha1.ConditionIndexed, "False", "ClaimNotAccepted"),
			condition(v1alpha1.ConditionReady, "False", "Propagating"),
		},
		want: "WebhookInstalled=False Propagating: Propagating message; Indexed=False ClaimNotAccepted: ClaimNotAccepted message",
	}, {
		name: "only the index missing",
		conds: []metav1.Condition{
			condition(v1alpha1.ConditionIndexed, "False", "ClaimNotAccepted"),
			condition(v1alpha1.ConditionReady, "False", "ClaimNotAccepted"),
		},
		want: "Indexed=False ClaimNotAccepted: ClaimNotAccepted message",
	}, {
		name: "nothing missing but the webhook's enforcement",
		conds: []metav1.Condition{
			condition(v1alpha1.ConditionIndexed, "True", "Indexed"),
			condition(v1alpha1.ConditionReady, "False", "NotYetEnforced"),
		},
		want: "Ready=False NotYetEnforced: NotYetEnforced message",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := &v1alpha1.DependencyRule{Status: v1alpha1.DependencyRuleStatus{Conditions: tt.conds}}
			if got := ruleState(rule); got != tt.want {
				t.Fatalf("ruleState = %q, want %q", got, tt.want)
			}
		})
	}
}

// vmRuleSpec is the spec of the VM-needs-VPC rule, deferring the refused
// deletions of VPCs or not.
func vmRuleSpec(deferDeletion bool) v1alpha1.DependencyRuleSpec {
	return v1alpha1.DependencyRuleSpec{
		Dependent: v1alpha1.Dependent{APIExportName: "compute.example.io", Group: "compute.example.io", Version: "v1", Kind: "VirtualMachine", Resource: "virtualmachines"},
		Dependencies: []v1alpha1.Dependency{{
			APIExportRef: v1alpha1.APIExportRef{Path: "root:org:network", Name: "network.example.io"},
			Group:        "network.example.io", Version: "v1", Resource: "vpcs",
			FieldRef: v1alpha1.FieldRef{Path: ".spec.vpcRef.name"},
		}},
		DeferDeletion: deferDeletion,
	}
}

// TestRuleSpecRoundTrip: a rule read from kcp (setFrom) converts back to
// the spec it has (spec), spec.deferDeletion included either way, with
// nothing unknown; so what refresh and import read is what apply writes.
func TestRuleSpecRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name          string
		deferDeletion bool
	}{
		{"not deferring", false},
		{"deferring", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rule := &v1alpha1.DependencyRule{Spec: vmRuleSpec(tt.deferDeletion)}
			var m ruleModel
			m.setFrom(rule)
			if want := types.BoolValue(tt.deferDeletion); !m.DeferDeletion.Equal(want) {
				t.Errorf("defer_deletion = %v, want %v", m.DeferDeletion, want)
			}
			spec, unknown := m.spec()
			if len(unknown) > 0 {
				t.Errorf("unknown fields %v, want none", unknown)
			}
			if !reflect.DeepEqual(spec, rule.Spec) {
				t.Errorf("spec() = %+v, want %+v", spec, rule.Spec)
			}
		})
	}
}

// TestRuleSpecDeferDeletion: defer_deletion is spec.deferDeletion; null is
// false, as the API's omitted field is; unknown is reported at its field
// path, and is false meanwhile.
func TestRuleSpecDeferDeletion(t *testing.T) {
	for _, tt := range []struct {
		name        string
		in          types.Bool
		want        bool
		wantUnknown bool
	}{
		{"true", types.BoolValue(true), true, false},
		{"false", types.BoolValue(false), false, false},
		{"null", types.BoolNull(), false, false},
		{"unknown", types.BoolUnknown(), false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m ruleModel
			m.setFrom(&v1alpha1.DependencyRule{Spec: vmRuleSpec(false)})
			m.DeferDeletion = tt.in
			spec, unknown := m.spec()
			if spec.DeferDeletion != tt.want {
				t.Errorf("spec.deferDeletion = %v, want %v", spec.DeferDeletion, tt.want)
			}
			if unknown[deferDeletionField] != tt.wantUnknown {
				t.Errorf("unknown[%s] = %v, want %v", deferDeletionField, unknown[deferDeletionField], tt.wantUnknown)
			}
			if got := m.object().Spec.DeferDeletion; got != tt.want {
				t.Errorf("object().spec.deferDeletion = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRuleRefreshFillsAddedAttributes: a state written before
// defer_deletion and wait_for_enforcement existed (both null) refreshes to
// what kcp has and to the default, so a configuration that sets neither
// plans no change; a rule edited in kcp refreshes to the edit, which the
// plan then shows as drift; values in state are kept or replaced by kcp's,
// never by defaults.
func TestRuleRefreshFillsAddedAttributes(t *testing.T) {
	for _, tt := range []struct {
		name              string
		deferInState      types.Bool
		waitInState       types.Bool
		deferInKCP        bool
		wantDefer, wantWt types.Bool
	}{
		{"state from before both", types.BoolNull(), types.BoolNull(), false, types.BoolValue(false), types.BoolValue(true)},
		{"state from before, rule deferring in kcp", types.BoolNull(), types.BoolNull(), true, types.BoolValue(true), types.BoolValue(true)},
		{"deferring, unchanged", types.BoolValue(true), types.BoolValue(false), true, types.BoolValue(true), types.BoolValue(false)},
		{"deferring, unset by hand", types.BoolValue(true), types.BoolValue(true), false, types.BoolValue(false), types.BoolValue(true)},
		{"not deferring, set by hand", types.BoolValue(false), types.BoolValue(true), true, types.BoolValue(true), types.BoolValue(true)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := ruleModel{DeferDeletion: tt.deferInState, WaitForEnforcement: tt.waitInState}
			m.setFrom(&v1alpha1.DependencyRule{Spec: vmRuleSpec(tt.deferInKCP)})
			m.fillAddedAttributes()
			if !m.DeferDeletion.Equal(tt.wantDefer) {
				t.Errorf("defer_deletion = %v, want %v", m.DeferDeletion, tt.wantDefer)
			}
			if !m.WaitForEnforcement.Equal(tt.wantWt) {
				t.Errorf("wait_for_enforcement = %v, want %v", m.WaitForEnforcement, tt.wantWt)
			}
		})
	}
}

// TestRuleApplyConfiguration: the provider applies spec.deferDeletion also
// when false, so that it owns the field and apply resets a true set by
// hand; the rest of the rule is applied as converted.
func TestRuleApplyConfiguration(t *testing.T) {
	for _, tt := range []struct {
		name          string
		deferDeletion bool
	}{
		{"not deferring", false},
		{"deferring", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rule := &v1alpha1.DependencyRule{
				TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DependencyRule"},
				ObjectMeta: metav1.ObjectMeta{Name: "vm-needs-vpc"},
				Spec:       vmRuleSpec(tt.deferDeletion),
			}
			u, err := applyConfiguration(rule)
			check.Must(t, err)
			got, found, err := unstructured.NestedBool(u.Object, "spec", "deferDeletion")
			if err != nil || !found || got != tt.deferDeletion {
				t.Errorf("spec.deferDeletion = %v (found %v, err %v), want %v", got, found, err, tt.deferDeletion)
			}
			if u.GetName() != "vm-needs-vpc" || u.GetKind() != "DependencyRule" {
				t.Errorf("applied %s %s, want DependencyRule vm-needs-vpc", u.GetKind(), u.GetName())
			}
			if _, found := u.Object["status"]; found {
				t.Error("the applied configuration holds status, which the server owns")
			}
			deps, _, _ := unstructured.NestedSlice(u.Object, "spec", "dependencies")
			if len(deps) != 1 {
				t.Fatalf("%d dependencies applied, want 1", len(deps))
			}
			if field, _, _ := unstructured.NestedString(deps[0].(map[string]interface{}), "fieldRef", "path"); field != ".spec.vpcRef.name" {
				t.Errorf("dependencies[0].fieldRef.path = %q, want .spec.vpcRef.name", field)
			}
		})
	}
}

// TestRuleDroppedFields: a field the configuration sets that kcp did not
// keep (an export serving a schema from before the field prunes it) is
// reported by its field path; false, which is what an omitted field
// reads as, cannot be dropped, and a rule gone is left to the read.
func TestRuleDroppedFields(t *testing.T) {
	rule := func(deferDeletion bool) *v1alpha1.DependencyRule {
		return &v1alpha1.DependencyRule{Spec: vmRuleSpec(deferDeletion)}
	}
	for _, tt := range []struct {
		name string
		want bool
		got  *v1alpha1.DependencyRule
		out  []string
	}{
		{"kept", true, rule(true), nil},
		{"dropped", true, rule(false), []string{deferDeletionField}},
		{"false", false, rule(false), nil},
		{"set by someone else", false, rule(true), nil},
		{"rule gone", true, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := droppedFields(vmRuleSpec(tt.want), tt.got); !slices.Equal(got, tt.out) {
				t.Errorf("droppedFields = %v, want %v", got, tt.out)
			}
		})
	}
}

// TestCheckedSpec: the plan-time checks (exports served, cycles) are not
// repeated for a change of defer_deletion alone, and are for a change of
// what they read.
func TestCheckedSpec(t *testing.T) {
	otherField := vmRuleSpec(false)
	otherField.Dependencies = []v1alpha1.Dependency{otherField.Dependencies[0]}
	otherField.Dependencies[0].FieldRef.Path = ".spec.networks[*].vpc"
	for _, tt := range []struct {
		name        string
		was, is     v1alpha1.DependencyRuleSpec
		wantChecked bool
	}{
		{"unchanged", vmRuleSpec(true), vmRuleSpec(true), false},
		{"defer_deletion on", vmRuleSpec(false), vmRuleSpec(true), false},
		{"defer_deletion off", vmRuleSpec(true), vmRuleSpec(false), false},
		{"field path", vmRuleSpec(false), otherField, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := !reflect.DeepEqual(checkedSpec(tt.was), checkedSpec(tt.is)); got != tt.wantChecked {
				t.Errorf("checked again = %v, want %v", got, tt.wantChecked)
			}
		})
	}
}

// TestRulePlanDeferDeletion plans the rule through the provider's protocol
// server as Terraform does after a refresh: a state written before
// defer_deletion existed, refreshed, plans no change for a configuration
// without it; setting or unsetting it, in the configuration or by hand in
// kcp, plans an update in place, never a replacement.
func TestRulePlanDeferDeletion(t *testing.T) {
	ctx := context.Background()
	s := ruleTestSchema(t)
	for _, tt := range []struct {
		name string
		// inState is defer_deletion in the state before the refresh (null:
		// written before the attribute existed); inKCP is the rule's
		// spec.deferDeletion that the refresh reads.
		inState types.Bool
		inKCP   bool
		// inConfig is defer_deletion in the configuration (null: left out).
		inConfig   types.Bool
		wantPlan   bool
		wantChange bool
	}{
		{name: "state from before the attribute, configuration without it", inState: types.BoolNull(), inKCP: false, inConfig: types.BoolNull(), wantPlan: false},
		{name: "state from before the attribute, configuration sets false", inState: types.BoolNull(), inKCP: false, inConfig: types.BoolValue(false), wantPlan: false},
		{name: "configuration sets it", inState: types.BoolValue(false), inKCP: false, inConfig: types.BoolValue(true), wantPlan: true, wantChange: true},
		{name: "configuration keeps it", inState: types.BoolValue(true), inKCP: true, inConfig: types.BoolValue(true), wantPlan: true},
		{name: "configuration drops it", inState: types.BoolValue(true), inKCP: true, inConfig: types.BoolNull(), wantPlan: false, wantChange: true},
		{name: "set by hand in kcp", inState: types.BoolValue(false), inKCP: true, inConfig: types.BoolNull(), wantPlan: false, wantChange: true},
		{name: "unset by hand in kcp", inState: types.BoolValue(true), inKCP: false, inConfig: types.BoolValue(true), wantPlan: true, wantChange: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The state as stored, decoded with this schema, and refreshed
			// as Read does.
			stored := vmRuleModel(t, s, tt.inState)
			if tt.inState.IsNull() {
				stored.WaitForEnforcement = types.BoolNull()
			}
			var refreshed ruleModel
			if diags := (tfsdk.State{Schema: s, Raw: ruleValue(t, s, &stored)}).Get(ctx, &refreshed); diags.HasError() {
				t.Fatalf("decoding the state: %v", diags)
			}
			refreshed.setFrom(&v1alpha1.DependencyRule{Spec: vmRuleSpec(tt.inKCP)})
			refreshed.fillAddedAttributes()
			prior := ruleValue(t, s, &refreshed)

			config := vmRuleModel(t, s, tt.inConfig)
			config.ID, config.Ready, config.Conditions = types.StringNull(), types.BoolNull(), types.MapNull(types.StringType)
			config.WaitForEnforcement = types.BoolNull()
			// What Terraform proposes: the configuration, and the prior
			// state's values where it leaves a computed attribute out.
			proposed := config
			proposed.ID, proposed.Ready, proposed.Conditions, proposed.WaitForEnforcement = refreshed.ID, refreshed.Ready, refreshed.Conditions, refreshed.WaitForEnforcement
			if config.DeferDeletion.IsNull() {
				proposed.DeferDeletion = refreshed.DeferDeletion
			}

			resp := planRule(t, s, prior, ruleValue(t, s, &config), ruleValue(t, s, &proposed))
			planned, err := resp.PlannedState.Unmarshal(s.Type().TerraformType(ctx))
			check.Must(t, err)
			var got types.Bool
			if diags := (tfsdk.Plan{Schema: s, Raw: planned}).GetAttribute(ctx, path.Root("defer_deletion"), &got); diags.HasError() {
				t.Fatalf("reading the plan: %v", diags)
			}
			if !got.Equal(types.BoolValue(tt.wantPlan)) {
				t.Errorf("planned defer_deletion = %v, want %v", got, tt.wantPlan)
			}
			if change := !planned.Equal(prior); change != tt.wantChange {
				t.Errorf("plan changes the rule: %v, want %v", change, tt.wantChange)
			}
			if len(resp.RequiresReplace) > 0 {
				t.Errorf("plan replaces the rule for %v, want an update in place", resp.RequiresReplace)
			}
		})
	}
}

// ruleTestSchema is the schema of depctrl_dependency_rule.
func ruleTestSchema(t *testing.T) schema.Schema {
	t.Helper()
	var resp fwresource.SchemaResponse
	NewDependencyRuleResource().Schema(context.Background(), fwresource.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("schema: %v", resp.Diagnostics)
	}
	return resp.Schema
}

// vmRuleModel is the VM-needs-VPC rule in root:compute as a state holds it
// after it was applied, not enforced (no runtime), with deferDeletion as
// defer_deletion and no timeouts block.
func vmRuleModel(t *testing.T, s schema.Schema, deferDeletion types.Bool) ruleModel {
	t.Helper()
	m := ruleModel{
		workspaceObjectModel: workspaceObjectModel{ID: types.StringValue("root:compute/vm-needs-vpc"), WorkspacePath: types.StringValue("root:compute"), Name: types.StringValue("vm-needs-vpc")},
		WaitForEnforcement:   types.BoolValue(true),
	}
	m.setFrom(&v1alpha1.DependencyRule{Spec: vmRuleSpec(false)})
	m.DeferDeletion = deferDeletion
	typ, ok := s.Blocks["timeouts"].Type().(attr.TypeWithAttributeTypes)
	if !ok {
		t.Fatalf("the timeouts block's type is %T, not an object", s.Blocks["timeouts"].Type())
	}
	m.Timeouts = timeouts.Value{Object: types.ObjectNull(typ.AttributeTypes())}
	return m
}

// ruleValue is m as a value of the schema s.
func ruleValue(t *testing.T, s schema.Schema, m *ruleModel) tftypes.Value {
	t.Helper()
	ctx := context.Background()
	st := tfsdk.State{Schema: s, Raw: tftypes.NewValue(s.Type().TerraformType(ctx), nil)}
	if diags := st.Set(ctx, m); diags.HasError() {
		t.Fatalf("encoding the rule: %v", diags)
	}
	return st.Raw
}

// planRule asks the provider, as Terraform does, to plan the rule from
// prior to config, with what Terraform proposed.
func planRule(t *testing.T, s schema.Schema, prior, config, proposed tftypes.Value) *tfprotov6.PlanResourceChangeResponse {
	t.Helper()
	ctx := context.Background()
	typ := s.Type().TerraformType(ctx)
	dv := func(v tftypes.Value) *tfprotov6.DynamicValue {
		d, err := tfprotov6.NewDynamicValue(typ, v)
		check.Must(t, err)
		return &d
	}
	idType := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"workspace_path": tftypes.String, "name": tftypes.String}}
	id, err := tfprotov6.NewDynamicValue(idType, tftypes.NewValue(idType, map[string]tftypes.Value{
		"workspace_path": tftypes.NewValue(tftypes.String, "root:compute"), "name": tftypes.NewValue(tftypes.String, "vm-needs-vpc"),
	}))
	check.Must(t, err)
	server, err := testAccProtoV6ProviderFactories["depctrl"]()
	check.Must(t, err)
	resp, err := server.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{
		TypeName:         "depctrl_dependency_rule",
		PriorState:       dv(prior),
		Config:           dv(config),
		ProposedNewState: dv(proposed),
		PriorIdentity:    &tfprotov6.ResourceIdentityData{IdentityData: &id},
	})
	check.Must(t, err)
	for _, d := range resp.Diagnostics {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			t.Fatalf("plan: %s: %s", d.Summary, d.Detail)
		}
	}
	return resp
}
