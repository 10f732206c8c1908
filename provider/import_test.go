package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
)

// importPlansNothing is the import step every resource's test has: import
// addr with an import block, as a user would, and plan the configuration
// of the step before it. The plan must be empty: nothing to change and
// nothing to replace, everything configurable read back.
func importPlansNothing(addr, id string) resource.TestStep {
	return resource.TestStep{
		ResourceName:     addr,
		ImportState:      true,
		ImportStateKind:  resource.ImportBlockWithID,
		ImportStateId:    id,
		ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
	}
}

// importVerified is the step that imports addr by id, as terraform
// import does, and checks that it reads back the state as applied
// (timeouts aside: they are configuration only).
func importVerified(addr, id string) resource.TestStep {
	return resource.TestStep{
		ResourceName:            addr,
		ImportState:             true,
		ImportStateId:           id,
		ImportStateVerify:       true,
		ImportStateVerifyIgnore: []string{"timeouts"},
	}
}

// withConfig is step with its own configuration instead of the previous
// step's.
func withConfig(step resource.TestStep, config string) resource.TestStep {
	step.Config = config
	return step
}

// TestRuntimeImportID: the import ID of depctrl_runtime sets what the
// cluster does not record, and nothing else.
func TestRuntimeImportID(t *testing.T) {
	ctx := context.Background()
	r := &runtimeResource{}
	var sr fwresource.SchemaResponse
	r.Schema(ctx, fwresource.SchemaRequest{}, &sr)
	for _, tt := range []struct {
		id   string
		want map[string]string
		err  string
	}{
		{id: "depctrl-system", want: map[string]string{"id": "depctrl-system/depctrl", "namespace": "depctrl-system", "name": "depctrl"}},
		{id: "ns/rt,workspace_path=root:depctrl,controller.kubeconfig_path=c.kubeconfig,controller.context=admin,webhook.kubeconfig_path=w.kubeconfig,webhook.certificate_validity=1h",
			want: map[string]string{"id": "ns/rt", "workspace_path": "root:depctrl", "controller.kubeconfig_path": "c.kubeconfig", "controller.context": "admin",
				"webhook.kubeconfig_path": "w.kubeconfig", "webhook.certificate_validity": "1h"}},
		{id: "ns/rt,image=x", err: "not <attribute>=<value>"},
		{id: "ns/rt,workspace_path", err: "not <attribute>=<value>"},
		{id: "ns/rt,workspace_path=a,workspace_path=b", err: "once each"},
		{id: "ns/rt,webhook.context=admin", err: "webhook.context in"},
		{id: "NS/rt", err: "is not <namespace>/<name>"},
	} {
		resp := &fwresource.ImportStateResponse{State: tfsdk.State{Schema: sr.Schema, Raw: tftypes.NewValue(sr.Schema.Type().TerraformType(ctx), nil)}}
		r.ImportState(ctx, fwresource.ImportStateRequest{ID: tt.id}, resp)
		if tt.err != "" {
			if !resp.Diagnostics.HasError() || !strings.Contains(resp.Diagnostics.Errors()[0].Detail(), tt.err) {
				t.Errorf("%s: want an error saying %q, got %v", tt.id, tt.err, resp.Diagnostics)
			}
			continue
		}
		if resp.Diagnostics.HasError() {
			t.Errorf("%s: %v", tt.id, resp.Diagnostics)
			continue
		}
		for attr, want := range tt.want {
			at := path.Empty()
			for _, step := range strings.Split(attr, ".") {
				at = at.AtName(step)
			}
			var got types.String
			resp.State.GetAttribute(ctx, at, &got)
			if got.ValueString() != want {
				t.Errorf("%s: %s = %q, want %q", tt.id, attr, got.ValueString(), want)
			}
		}
	}
}

// importByIdentityPlansNothing imports addr with an import block that gives
// the identity in state (not the ID), as Terraform 1.12 and later allow,
// and plans the configuration of the step before it: nothing to change.
// The identity the import returns must equal the one in state.
func importByIdentityPlansNothing(addr string) resource.TestStep {
	return resource.TestStep{
		ResourceName:     addr,
		ImportState:      true,
		ImportStateKind:  resource.ImportBlockWithResourceIdentity,
		ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
	}
}

// importByIdentityBlockPlansNothing is importByIdentityPlansNothing with
// the import block written out: identity adds the attributes that only an
// import sets (where a shard's credentials are, what a runtime's
// configuration says that the cluster does not record), which the identity
// in state leaves null. config is the configuration to plan.
func importByIdentityBlockPlansNothing(addr, config string, identity map[string]string) resource.TestStep {
	block := fmt.Sprintf("\nimport {\n  to = %s\n  identity = {\n", addr)
	for _, k := range slices.Sorted(maps.Keys(identity)) {
		block += fmt.Sprintf("    %s = %q\n", k, identity[k])
	}
	block += "  }\n}\n"
	step := importByIdentityPlansNothing(addr)
	step.Config = config + block
	step.ImportStateConfigExact = true
	return step
}

// expectIdentity applies config again, which changes nothing, and checks
// the identity in state.
func expectIdentity(config, addr string, identity map[string]knownvalue.Check) resource.TestStep {
	return resource.TestStep{
		Config: config,
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectEmptyPlan(),
		}},
		ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectIdentity(addr, identity)},
	}
}
