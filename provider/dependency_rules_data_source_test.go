package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// TestAccDependencyRulesDataSource_basic lists, with the runtime running,
// the rules of a workspace that holds two enforced rules (one deferring
// deletions, one not), of one that binds the dep-ctrl export and holds
// none, and of one that has not bound it.
func TestAccDependencyRulesDataSource_basic(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	compute, network := enforcingTopology(ctx, t, e)
	unbound := testOrg(t, e)
	// Two rules in compute: the VM rule, and one for ManagedDBs.
	dbRule := managedDBRule(fmt.Sprintf("%q", network), "firewallrules", ".spec.firewalls[*].name")
	dbRule.Workspace = fmt.Sprintf("%q", compute)
	dbRule.DeferDeletion = "true"
	rules := vmRuleConfig(e, compute, network, ".spec.vpcRef.name") + dbRule.HCL("db_needs_firewall", "db-needs-firewall")
	listed := func(name string, v knownvalue.Check) statecheck.StateCheck {
		return statecheck.ExpectKnownValue("data.depctrl_dependency_rules."+name, tfjsonpath.New("rules"), v)
	}
	// enforced is an enforced rule as the data source lists it.
	enforced := func(name, dependent, dependency string, deferDeletion bool) knownvalue.Check {
		isTrue := knownvalue.StringRegexp(regexp.MustCompile(`^True `))
		return knownvalue.ObjectExact(map[string]knownvalue.Check{
			"name":           knownvalue.StringExact(name),
			"dependent":      knownvalue.StringExact(dependent),
			"dependencies":   knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(dependency)}),
			"defer_deletion": knownvalue.Bool(deferDeletion),
			"ready":          knownvalue.Bool(true),
			"conditions": knownvalue.MapPartial(map[string]knownvalue.Check{
				v1alpha1.ConditionReady: isTrue, v1alpha1.ConditionEnforced: isTrue,
			}),
		})
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: rules},
			{
				// Read once the rules are enforced: nothing else changes.
				Config: rules + fmt.Sprintf(`
data "depctrl_dependency_rules" "compute" {
  workspace_path = depctrl_dependency_rule.vm_needs_vpc.workspace_path
}

data "depctrl_dependency_rules" "network" {
  workspace_path = %q
}

data "depctrl_dependency_rules" "unbound" {
  workspace_path = %q
}
`, network, unbound.Path),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.depctrl_dependency_rules.compute", tfjsonpath.New("id"), knownvalue.StringExact(compute)),
					// Sorted by name.
					listed("compute", knownvalue.ListExact([]knownvalue.Check{
						enforced("db-needs-firewall", "manageddbs.compute.test.io", "firewallrules.network.test.io in "+network+"/network.test.io at .spec.firewalls[*].name", true),
						enforced("vm-needs-vpc", "virtualmachines.compute.test.io", "vpcs.network.test.io in "+network+"/network.test.io at .spec.vpcRef.name", false),
					})),
					listed("network", knownvalue.ListSizeExact(0)),
					listed("unbound", knownvalue.ListSizeExact(0)),
				},
			},
		},
	})
}

// TestRuleSummary: each listed rule says whether it defers deletions, as
// its spec does (false for a rule that does not set it), beside its types.
func TestRuleSummary(t *testing.T) {
	for _, tt := range []struct {
		name          string
		deferDeletion bool
	}{
		{"not deferring", false},
		{"deferring", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rule := &v1alpha1.DependencyRule{ObjectMeta: metav1.ObjectMeta{Name: "vm-needs-vpc"}, Spec: vmRuleSpec(tt.deferDeletion)}
			obj, diags := ruleSummary(rule)
			if diags.HasError() {
				t.Fatalf("ruleSummary: %v", diags)
			}
			attrs := obj.Attributes()
			if got := attrs["defer_deletion"]; !got.Equal(types.BoolValue(tt.deferDeletion)) {
				t.Errorf("defer_deletion = %v, want %v", got, tt.deferDeletion)
			}
			if got := attrs["dependencies"]; !got.Equal(stringList([]string{"vpcs.network.example.io in root:org:network/network.example.io at .spec.vpcRef.name"})) {
				t.Errorf("dependencies = %v", got)
			}
			if got := attrs["ready"]; !got.Equal(types.BoolValue(false)) {
				t.Errorf("ready = %v, want false for a rule without status", got)
			}
		})
	}
}
