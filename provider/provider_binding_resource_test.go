package provider

import (
	"context"
	"fmt"
	"slices"
	"testing"

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
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/controller"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// bindingConfig is an export in depCtrl and a binding to it in ws.
func bindingConfig(e *env.Env, depCtrl, ws, extra string) string {
	return providerConfig(e) + fmt.Sprintf(`
resource "depctrl_export" "test" {
  workspace_path = %q
  runtime_users  = ["depctrl-controller"]
}

resource "depctrl_provider_binding" "test" {
  workspace_path = %q
  export_path    = depctrl_export.test.workspace_path
  export_name    = depctrl_export.test.name
%s}
`, depCtrl, ws, extra)
}

// acceptedClaims are the claims of the bundled export, as a binding that
// accepts them shows them.
func acceptedClaims() knownvalue.Check {
	return knownvalue.ListExact([]knownvalue.Check{
		knownvalue.StringExact("admissionregistration.k8s.io/mutatingwebhookconfigurations: create,delete,get,list,patch,update,watch = Accepted"),
		knownvalue.StringExact("admissionregistration.k8s.io/validatingwebhookconfigurations: create,delete,get,list,patch,update,watch = Accepted"),
		knownvalue.StringExact("apis.kcp.io/apiexports: get = Accepted"),
		knownvalue.StringExact("apis.kcp.io/apiresourceschemas: get = Accepted"),
		knownvalue.StringExact("events: create = Accepted"),
	})
}

func TestAccProviderBindingResource_basic(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	ctx := context.Background()
	org := testOrg(t, e)
	depCtrl, err := e.CreateWorkspace(ctx, org.Path, "dep-ctrl")
	check.Must(t, err)
	network, err := e.CreateWorkspace(ctx, org.Path, "network")
	check.Must(t, err)
	d := adminDynamic(t, e, network.Path)
	addr := "depctrl_provider_binding.test"
	attr := func(name string, v knownvalue.Check) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(addr, tfjsonpath.New(name), v)
	}
	config := bindingConfig(e, depCtrl.Path, network.Path, "")

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if _, err := d.Resource(apiBindingsGVR).Get(ctx, defaultBindingName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("APIBinding left behind after destroy (err=%v)", err)
			}
			for _, gvr := range webhookConfigurationGVRs {
				if _, err := d.Resource(gvr).Get(ctx, v1alpha1.WebhookConfigurationName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("the controller's %s left behind after destroy (err=%v)", gvr.Resource, err)
				}
			}
			if _, err := d.Resource(webhookConfigurationGVRs[0]).Get(ctx, "someone-elses", metav1.GetOptions{}); err != nil {
				return fmt.Errorf("destroy touched a webhook configuration that is not the controller's: %v", err)
			}
			return nil
		},
		Steps: slices.Concat([]resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					attr("id", knownvalue.StringExact(network.Path+"/"+defaultBindingName)),
					attr("phase", knownvalue.StringExact("Bound")),
					attr("bound_resources", knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("dependencyrules.dependencies.opendefense.cloud")})),
					attr("permission_claims", acceptedClaims()),
				},
			},
			{
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			importVerified(addr, network.Path+"/"+defaultBindingName),
			importPlansNothing(addr, network.Path+"/"+defaultBindingName),
		}, identitySteps(t,
			// The identity names the binding by its workspace and name, and an
			// import block may give it instead of the ID.
			expectIdentity(config, addr, map[string]knownvalue.Check{
				"workspace_path": knownvalue.StringExact(network.Path),
				"name":           knownvalue.StringExact(defaultBindingName),
			}),
			importByIdentityPlansNothing(addr),
		), []resource.TestStep{
			{
				// Drift: the claim is rejected by hand; apply accepts it again.
				PreConfig: func() {
					b, err := d.Resource(apiBindingsGVR).Get(ctx, defaultBindingName, metav1.GetOptions{})
					check.Must(t, err)
					claims, _, _ := unstructured.NestedSlice(b.Object, "spec", "permissionClaims")
					claims[0].(map[string]interface{})["state"] = "Rejected"
					check.Must(t, unstructured.SetNestedSlice(b.Object, claims, "spec", "permissionClaims"))
					_, err = d.Resource(apiBindingsGVR).Update(ctx, b, metav1.UpdateOptions{})
					check.Must(t, err)
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("permission_claims"), acceptedClaims()),
				}},
				Check: func(*terraform.State) error {
					b, err := d.Resource(apiBindingsGVR).Get(ctx, defaultBindingName, metav1.GetOptions{})
					if err != nil {
						return err
					}
					claims, _, _ := unstructured.NestedSlice(b.Object, "spec", "permissionClaims")
					if state := claims[0].(map[string]interface{})["state"]; state != "Accepted" {
						return fmt.Errorf("claim state %v after apply, want Accepted", state)
					}
					return nil
				},
			},
			{
				// Deleted outside Terraform: recreated.
				PreConfig: func() {
					check.Must(t, d.Resource(apiBindingsGVR).Delete(ctx, defaultBindingName, metav1.DeleteOptions{}))
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{attr("phase", knownvalue.StringExact("Bound"))},
			},
			{
				// The controller's configurations are still there when the
				// binding goes (it was not running when the rules were
				// deleted): destroy removes them, and only them.
				PreConfig: func() {
					s := controller.WebhookSettings{ConfigurationName: v1alpha1.WebhookConfigurationName, URL: "https://depctrl.invalid/validate",
						MutateURL: "https://depctrl.invalid/mutate", TimeoutSeconds: 10}
					gvrs := []schema.GroupVersionResource{{Group: "network.example.io", Version: "v1", Resource: "vpcs"}}
					theirs := controller.DesiredWebhookConfiguration(s, gvrs)
					theirs.Name, theirs.Labels = "someone-elses", nil
					for i, obj := range []runtime.Object{controller.DesiredWebhookConfiguration(s, gvrs), controller.DesiredIndexConfiguration(s, gvrs), theirs} {
						u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
						check.Must(t, err)
						_, err = d.Resource(webhookConfigurationGVRs[i%2]).Create(ctx, &unstructured.Unstructured{Object: u}, metav1.CreateOptions{})
						check.Must(t, err)
					}
				},
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		}),
	})
}

func TestAccProviderBindingResource_errors(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	ctx := context.Background()
	org := testOrg(t, e)
	network, err := e.CreateWorkspace(ctx, org.Path, "network")
	check.Must(t, err)
	tests := []struct {
		name   string
		config string
		want   string
	}{
		{
			name: "no export there",
			config: providerConfig(e) + fmt.Sprintf(`
resource "depctrl_provider_binding" "test" {
  workspace_path = %q
  export_path    = %q
  timeouts {
    create = "20s"
  }
}
`, network.Path, org.Path),
			want: `APIExport not found[\s\S]*there is no APIExport\s+"dependencies.opendefense.cloud" in workspace\s+"` + org.Path + `"`,
		},
		{
			name: "missing provider workspace",
			config: providerConfig(e) + fmt.Sprintf(`
resource "depctrl_provider_binding" "test" {
  workspace_path = %q
  export_path    = %q
}
`, org.Path+":absent", org.Path),
			want: `Workspace not found[\s\S]*"` + org.Path + `:absent" does not\s+exist`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testConfigFails(t, tt.config, tt.want) })
	}
}
