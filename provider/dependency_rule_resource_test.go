package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// enforcingTopology is servedTopology with the runtime running against
// it, so that rules applied in compute are enforced. It returns the compute
// and network workspace paths.
func enforcingTopology(ctx context.Context, t *testing.T, e *env.Env) (compute, network string) {
	t.Helper()
	depctrl, compute, network := servedTopology(ctx, t, e)
	runtimetest.Start(ctx, t, e, depctrl)
	return compute, network
}

// vmRuleConfig is the VM rule, depctrl_dependency_rule.vm_needs_vpc, in
// compute, its VPCs exported from network and named at field.
func vmRuleConfig(e *env.Env, compute, network, field string) string {
	return providerConfig(e) + vmRule{Workspace: fmt.Sprintf("%q", compute), NetworkPath: fmt.Sprintf("%q", network), Field: field}.HCL("vm_needs_vpc", "vm-needs-vpc")
}

// ruleFieldPath returns the field path of the first dependency of the
// DependencyRule name, as kcp has it.
func ruleFieldPath(ctx context.Context, d dynamic.Interface, name string) (string, error) {
	u, err := d.Resource(v1alpha1.GroupVersionResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	deps, _, _ := unstructured.NestedSlice(u.Object, "spec", "dependencies")
	if len(deps) == 0 {
		return "", fmt.Errorf("DependencyRule %s has no dependency", name)
	}
	path, _, _ := unstructured.NestedString(deps[0].(map[string]interface{}), "fieldRef", "path")
	return path, nil
}

// setRuleFieldPath changes, outside Terraform, the field path of the first
// dependency of the DependencyRule name.
func setRuleFieldPath(ctx context.Context, t *testing.T, d dynamic.Interface, name, path string) {
	t.Helper()
	u, err := d.Resource(v1alpha1.GroupVersionResource).Get(ctx, name, metav1.GetOptions{})
	check.Must(t, err)
	deps, _, _ := unstructured.NestedSlice(u.Object, "spec", "dependencies")
	check.Must(t, unstructured.SetNestedField(deps[0].(map[string]interface{}), path, "fieldRef", "path"))
	check.Must(t, unstructured.SetNestedSlice(u.Object, deps, "spec", "dependencies"))
	_, err = d.Resource(v1alpha1.GroupVersionResource).Update(ctx, u, metav1.UpdateOptions{})
	check.Must(t, err)
}

// setRuleDeferDeletion sets, outside Terraform, spec.deferDeletion of the
// DependencyRule name: on sets it to true, off removes it, as a rule
// written without it has none.
func setRuleDeferDeletion(ctx context.Context, t *testing.T, d dynamic.Interface, name string, on bool) {
	t.Helper()
	u, err := d.Resource(v1alpha1.GroupVersionResource).Get(ctx, name, metav1.GetOptions{})
	check.Must(t, err)
	if on {
		check.Must(t, unstructured.SetNestedField(u.Object, true, "spec", "deferDeletion"))
	} else {
		unstructured.RemoveNestedField(u.Object, "spec", "deferDeletion")
	}
	_, err = d.Resource(v1alpha1.GroupVersionResource).Update(ctx, u, metav1.UpdateOptions{})
	check.Must(t, err)
}

// ruleDefersInKCP checks spec.deferDeletion of the DependencyRule name, as
// kcp has it (absent is false).
func ruleDefersInKCP(ctx context.Context, d dynamic.Interface, name string, want bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := d.Resource(v1alpha1.GroupVersionResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got, _, err := unstructured.NestedBool(u.Object, "spec", "deferDeletion")
		if err == nil && got != want {
			err = fmt.Errorf("the rule in kcp has spec.deferDeletion %v, want %v", got, want)
		}
		return err
	}
}

// TestAccDependencyRuleResource_basic applies the VM rule with the runtime
// running and waits until it is enforced, checks every attribute, imports
// it (by ID and by identity), repairs a field path changed by hand,
// changes the field path in place, turns defer_deletion on and off in place
// (imported and repaired like the rest, in either direction) and destroys
// the rule, which the controller cleans up after without a warning.
func TestAccDependencyRuleResource_basic(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	compute, network := enforcingTopology(ctx, t, e)
	d := adminDynamic(t, e, compute)
	addr := "depctrl_dependency_rule.vm_needs_vpc"
	id := compute + "/vm-needs-vpc"
	attr := func(name string, v knownvalue.Check) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(addr, tfjsonpath.New(name), v)
	}
	fieldPath := tfjsonpath.New("dependency").AtSliceIndex(0).AtMapKey("field_ref").AtMapKey("path")
	// enforced is what an enforced rule with its dependency at field has
	// in state.
	enforced := func(field string) []statecheck.StateCheck {
		isTrue := knownvalue.StringRegexp(regexp.MustCompile(`^True `))
		return []statecheck.StateCheck{
			attr("id", knownvalue.StringExact(id)),
			attr("ready", knownvalue.Bool(true)),
			attr("conditions", knownvalue.MapPartial(map[string]knownvalue.Check{
				v1alpha1.ConditionReady: isTrue, v1alpha1.ConditionTypesServed: isTrue, v1alpha1.ConditionEnforced: isTrue,
			})),
			statecheck.ExpectKnownValue(addr, fieldPath, knownvalue.StringExact(field)),
		}
	}
	// inKCP checks the field path of the rule in kcp.
	inKCP := func(want string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			got, err := ruleFieldPath(ctx, d, "vm-needs-vpc")
			if err == nil && got != want {
				err = fmt.Errorf("the rule in kcp has field path %q, want %q", got, want)
			}
			return err
		}
	}
	// deferring is the rule at .spec.networks[*].vpc with defer_deletion.
	deferring := providerConfig(e) + vmRule{Workspace: fmt.Sprintf("%q", compute), NetworkPath: fmt.Sprintf("%q", network),
		Field: ".spec.networks[*].vpc", DeferDeletion: "true"}.HCL("vm_needs_vpc", "vm-needs-vpc")
	defersInKCP := func(want bool) resource.TestCheckFunc { return ruleDefersInKCP(ctx, d, "vm-needs-vpc", want) }
	// The runtime runs throughout: the destroy must not warn that the
	// controller left anything behind.
	resource.Test(t, withRuntimeRunning(resource.TestCase{
		CheckDestroy: func(*terraform.State) error {
			if _, err := d.Resource(v1alpha1.GroupVersionResource).Get(ctx, "vm-needs-vpc", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("DependencyRule left behind after destroy (err=%v)", err)
			}
			return nil
		},
		Steps: slices.Concat([]resource.TestStep{
			{
				Config: vmRuleConfig(e, compute, network, ".spec.vpcRef.name"),
				ConfigStateChecks: append(enforced(".spec.vpcRef.name"),
					attr("workspace_path", knownvalue.StringExact(compute)),
					attr("name", knownvalue.StringExact("vm-needs-vpc")),
					attr("wait_for_enforcement", knownvalue.Bool(true)),
					attr("defer_deletion", knownvalue.Bool(false)),
					attr("dependent", knownvalue.ObjectExact(map[string]knownvalue.Check{
						"api_export_name": knownvalue.StringExact("compute.test.io"),
						"group":           knownvalue.StringExact("compute.test.io"),
						"version":         knownvalue.StringExact("v1"),
						"kind":            knownvalue.StringExact("VirtualMachine"),
						"resource":        knownvalue.StringExact("virtualmachines"),
					})),
					attr("dependency", knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
						"api_export_ref": knownvalue.ObjectExact(map[string]knownvalue.Check{
							"path": knownvalue.StringExact(network),
							"name": knownvalue.StringExact("network.test.io"),
						}),
						"group":     knownvalue.StringExact("network.test.io"),
						"version":   knownvalue.StringExact("v1"),
						"resource":  knownvalue.StringExact("vpcs"),
						"field_ref": knownvalue.ObjectExact(map[string]knownvalue.Check{"path": knownvalue.StringExact(".spec.vpcRef.name")}),
					})})),
				),
				Check: inKCP(".spec.vpcRef.name"),
			},
			importVerified(addr, id),
			importPlansNothing(addr, id),
		}, identitySteps(t,
			// The identity names the rule by its workspace and name, and an
			// import block may give it instead of the ID.
			expectIdentity(vmRuleConfig(e, compute, network, ".spec.vpcRef.name"), addr, map[string]knownvalue.Check{
				"workspace_path": knownvalue.StringExact(compute),
				"name":           knownvalue.StringExact("vm-needs-vpc"),
			}),
			importByIdentityPlansNothing(addr),
		), []resource.TestStep{
			{
				// Drift: the field path is changed by hand. The plan shows
				// it; apply restores it, and the rule is enforced again.
				PreConfig: func() { setRuleFieldPath(ctx, t, d, "vm-needs-vpc", ".spec.somewhereElse") },
				Config:    vmRuleConfig(e, compute, network, ".spec.vpcRef.name"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectNonEmptyPlan(),
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: enforced(".spec.vpcRef.name"),
				Check:             inKCP(".spec.vpcRef.name"),
			},
			{
				// A changed field path updates the rule in place.
				Config: vmRuleConfig(e, compute, network, ".spec.networks[*].vpc"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: enforced(".spec.networks[*].vpc"),
				Check:             inKCP(".spec.networks[*].vpc"),
			},
			{
				// defer_deletion updates the rule in place, and apply
				// returns once the webhook enforces the new generation.
				Config: deferring,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("defer_deletion"), knownvalue.Bool(true)),
				}},
				ConfigStateChecks: append(enforced(".spec.networks[*].vpc"), attr("defer_deletion", knownvalue.Bool(true))),
				Check:             resource.ComposeAggregateTestCheckFunc(inKCP(".spec.networks[*].vpc"), defersInKCP(true)),
			},
			// Import reads it back.
			importVerified(addr, id),
			importPlansNothing(addr, id),
			{
				// Drift: deferDeletion removed by hand. The plan shows it;
				// apply restores it.
				PreConfig: func() { setRuleDeferDeletion(ctx, t, d, "vm-needs-vpc", false) },
				Config:    deferring,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectNonEmptyPlan(),
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: append(enforced(".spec.networks[*].vpc"), attr("defer_deletion", knownvalue.Bool(true))),
				Check:             defersInKCP(true),
			},
			{
				// Left out, it is false again: in place too.
				Config: vmRuleConfig(e, compute, network, ".spec.networks[*].vpc"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("defer_deletion"), knownvalue.Bool(false)),
				}},
				ConfigStateChecks: append(enforced(".spec.networks[*].vpc"), attr("defer_deletion", knownvalue.Bool(false))),
				Check:             defersInKCP(false),
			},
			{
				// Drift the other way: deferDeletion set by hand, by
				// another field manager. The plan shows it; apply, which
				// applies the field also when false, resets it.
				PreConfig: func() { setRuleDeferDeletion(ctx, t, d, "vm-needs-vpc", true) },
				Config:    vmRuleConfig(e, compute, network, ".spec.networks[*].vpc"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectNonEmptyPlan(),
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: append(enforced(".spec.networks[*].vpc"), attr("defer_deletion", knownvalue.Bool(false))),
				Check:             defersInKCP(false),
			},
		}),
	}))
}

// ruleFields are the parts of a rule the error cases vary.
type ruleFields struct {
	workspace, kind, version, exportPath, fieldPath string
	noDependency                                    bool
}

func (f ruleFields) config(e *env.Env) string {
	dependency := fmt.Sprintf(`
  dependency {
    api_export_ref = { path = %q, name = "network.example.io" }
    group          = "network.example.io"
    version        = "v1"
    resource       = "vpcs"
    field_ref      = { path = %q }
  }`, f.exportPath, f.fieldPath)
	if f.noDependency {
		dependency = ""
	}
	return providerConfig(e) + fmt.Sprintf(`
resource "depctrl_dependency_rule" "test" {
  workspace_path = %q
  name           = "vm-needs-vpc"

  dependent {
    api_export_name = "compute.example.io"
    group           = "compute.example.io"
    version         = %q
    kind            = %q
    resource        = "virtualmachines"
  }
%s
}
`, f.workspace, f.version, f.kind, dependency)
}

// The rule's lifecycle, import and drift, with the runtime enforcing it, are
// covered by TestAccDependencyRuleResource_basic (and on two shards by
// TestAccTopology_basic); these are the ways a rule is refused.
func TestAccDependencyRuleResource_errors(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	unbound := testOrg(t, e)
	valid := ruleFields{workspace: "root:compute", kind: "VirtualMachine", version: "v1", exportPath: "root:org:network", fieldPath: ".spec.vpcRef.name"}
	with := func(change func(*ruleFields)) ruleFields {
		f := valid
		change(&f)
		return f
	}
	tests := []struct {
		name   string
		fields ruleFields
		want   string
	}{
		{
			name:   "lowercase kind",
			fields: with(func(f *ruleFields) { f.kind = "virtualMachine" }),
			want:   `(?s)Invalid DependencyRule.*dependent\.kind.*CamelCase kind`,
		},
		{
			name:   "field path without a leading dot",
			fields: with(func(f *ruleFields) { f.fieldPath = "spec.vpcRef.name" }),
			want:   `(?s)Invalid DependencyRule.*dependency\[0\]\.field_ref\.path`,
		},
		{
			name:   "list index instead of [*]",
			fields: with(func(f *ruleFields) { f.fieldPath = ".spec.networks[0].vpc" }),
			want:   `(?s)Invalid DependencyRule.*dependency\[0\]\.field_ref\.path`,
		},
		{
			name:   "version",
			fields: with(func(f *ruleFields) { f.version = "1" }),
			want:   `(?s)Invalid DependencyRule.*dependent\.version.*a version such as v1`,
		},
		{
			name:   "export path",
			fields: with(func(f *ruleFields) { f.exportPath = "root::network" }),
			want:   `(?s)Invalid DependencyRule.*dependency\[0\]\.api_export_ref\.path`,
		},
		{
			name:   "no dependency",
			fields: with(func(f *ruleFields) { f.noDependency = true }),
			want:   `Invalid Block[\s\S]*Block dependency must have a configuration value`,
		},
		{
			name:   "workspace without the binding",
			fields: with(func(f *ruleFields) { f.workspace = unbound.Path }),
			want:   `DependencyRules not available[\s\S]*has not bound the dep-ctrl\s+export[\s\S]*depctrl_provider_binding`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testConfigFails(t, tt.fields.config(e), tt.want) })
	}
}

// ruleEnforcedInKCP fails unless the DependencyRule name, read from kcp
// through d, is enforced for its generation.
func ruleEnforcedInKCP(ctx context.Context, d dynamic.Interface, name string) error {
	u, err := d.Resource(v1alpha1.GroupVersionResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var rule v1alpha1.DependencyRule
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &rule); err != nil {
		return fmt.Errorf("decoding DependencyRule %s: %w", name, err)
	}
	if !enforced(&rule) {
		return fmt.Errorf("DependencyRule %s is not enforced: %s", name, ruleState(&rule))
	}
	return nil
}
