package provider

import (
	"context"
	"fmt"
	"regexp"
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
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

func exportConfig(e *env.Env, ws, extra string) string {
	return providerConfig(e) + fmt.Sprintf(`
resource "depctrl_export" "test" {
  workspace_path = %q
  runtime_users  = ["depctrl-controller", "depctrl-webhook"]
%s}
`, ws, extra)
}

func adminDynamic(t *testing.T, e *env.Env, path string) dynamic.Interface {
	t.Helper()
	cfg, err := e.AdminConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAccExportResource_basic(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	ws := testOrg(t, e)
	d := adminDynamic(t, e, ws.Path)
	ctx := context.Background()
	addr := "depctrl_export.test"
	attr := func(name string, v knownvalue.Check) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(addr, tfjsonpath.New(name), v)
	}
	// An older provider version's schema: same content, another name.
	oldSchema := v1alpha1.APIResourceSchema()
	oldSchema.Name = "v00000000." + v1alpha1.Resource + "." + v1alpha1.Group

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			checks := map[string]error{}
			_, checks["apiexport"] = d.Resource(apiExportsGVR).Get(ctx, v1alpha1.DefaultAPIExportName, metav1.GetOptions{})
			_, checks["apiresourceschema"] = d.Resource(apiResourceSchemasGVR).Get(ctx, v1alpha1.SchemaName(), metav1.GetOptions{})
			_, checks["clusterrole"] = d.Resource(clusterRolesGVR).Get(ctx, rbac.ExportAccessName, metav1.GetOptions{})
			_, checks["clusterrolebinding"] = d.Resource(clusterRoleBindingsGVR).Get(ctx, rbac.ExportAccessName, metav1.GetOptions{})
			for what, err := range checks {
				if !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s left behind after destroy (err=%v)", what, err)
				}
			}
			return nil
		},
		Steps: slices.Concat([]resource.TestStep{
			{
				Config: exportConfig(e, ws.Path, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					attr("id", knownvalue.StringExact(ws.Path+"/"+v1alpha1.DefaultAPIExportName)),
					attr("name", knownvalue.StringExact(v1alpha1.DefaultAPIExportName)),
					attr("schema_name", knownvalue.StringExact(v1alpha1.SchemaName())),
					attr("identity_hash", knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{20,}$`))),
					attr("permission_claims", knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("admissionregistration.k8s.io/mutatingwebhookconfigurations: create,delete,get,list,patch,update,watch"),
						knownvalue.StringExact("admissionregistration.k8s.io/validatingwebhookconfigurations: create,delete,get,list,patch,update,watch"),
						knownvalue.StringExact("apis.kcp.io/apiexports: get"),
						knownvalue.StringExact("apis.kcp.io/apiresourceschemas: get"),
						knownvalue.StringExact("events: create"),
					})),
				},
			},
			{
				Config:           exportConfig(e, ws.Path, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			importVerified(addr, ws.Path+"/"+v1alpha1.DefaultAPIExportName),
			importPlansNothing(addr, ws.Path+"/"+v1alpha1.DefaultAPIExportName),
		}, identitySteps(t,
			// The identity names the export by its workspace and name, and an
			// import block may give it instead of the ID.
			expectIdentity(exportConfig(e, ws.Path, ""), addr, map[string]knownvalue.Check{
				"workspace_path": knownvalue.StringExact(ws.Path),
				"name":           knownvalue.StringExact(v1alpha1.DefaultAPIExportName),
			}),
			importByIdentityPlansNothing(addr),
		), []resource.TestStep{
			{
				// Drift: the claims and a runtime rule are removed, and a
				// subject dropped, by hand. The plan shows it; apply repairs.
				PreConfig: func() {
					export, err := d.Resource(apiExportsGVR).Get(ctx, v1alpha1.DefaultAPIExportName, metav1.GetOptions{})
					check.Must(t, err)
					unstructured.RemoveNestedField(export.Object, "spec", "permissionClaims")
					_, err = d.Resource(apiExportsGVR).Update(ctx, export, metav1.UpdateOptions{})
					check.Must(t, err)
					role, err := d.Resource(clusterRolesGVR).Get(ctx, rbac.ExportAccessName, metav1.GetOptions{})
					check.Must(t, err)
					rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
					check.Must(t, unstructured.SetNestedSlice(role.Object, rules[:1], "rules"))
					_, err = d.Resource(clusterRolesGVR).Update(ctx, role, metav1.UpdateOptions{})
					check.Must(t, err)
					check.Must(t, d.Resource(clusterRoleBindingsGVR).Delete(ctx, rbac.ExportAccessName, metav1.DeleteOptions{}))
				},
				Config: exportConfig(e, ws.Path, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					export, err := d.Resource(apiExportsGVR).Get(ctx, v1alpha1.DefaultAPIExportName, metav1.GetOptions{})
					if err != nil {
						return err
					}
					if claims, _, _ := unstructured.NestedSlice(export.Object, "spec", "permissionClaims"); len(claims) != len(v1alpha1.APIExport("").Spec.PermissionClaims) {
						return fmt.Errorf("permission claims not restored: %v", claims)
					}
					binding, err := d.Resource(clusterRoleBindingsGVR).Get(ctx, rbac.ExportAccessName, metav1.GetOptions{})
					if err != nil {
						return fmt.Errorf("binding not restored: %w", err)
					}
					if subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects"); len(subjects) != 2 {
						return fmt.Errorf("binding subjects not restored: %v", subjects)
					}
					return nil
				},
			},
			{
				// Upgrade: the export still serves the schema an older
				// provider version installed. Apply moves it onto the bundled
				// schema and removes the old one.
				PreConfig: func() {
					check.Must(t, applyObjects(ctx, d, object{apiResourceSchemasGVR, oldSchema}))
					export, err := d.Resource(apiExportsGVR).Get(ctx, v1alpha1.DefaultAPIExportName, metav1.GetOptions{})
					check.Must(t, err)
					resources, _, _ := unstructured.NestedSlice(export.Object, "spec", "resources")
					resources[0].(map[string]interface{})["schema"] = oldSchema.Name
					check.Must(t, unstructured.SetNestedSlice(export.Object, resources, "spec", "resources"))
					_, err = d.Resource(apiExportsGVR).Update(ctx, export, metav1.UpdateOptions{})
					check.Must(t, err)
				},
				Config: exportConfig(e, ws.Path, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("schema_name"), knownvalue.StringExact(v1alpha1.SchemaName())),
				}},
				Check: func(*terraform.State) error {
					if _, err := d.Resource(apiResourceSchemasGVR).Get(ctx, oldSchema.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
						return fmt.Errorf("the previous schema %s was not removed (err=%v)", oldSchema.Name, err)
					}
					return nil
				},
			},
			{
				// Subjects are updated in place.
				Config: exportConfig(e, ws.Path, `  runtime_groups = ["depctrl-runtime"]`+"\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					binding, err := d.Resource(clusterRoleBindingsGVR).Get(ctx, rbac.ExportAccessName, metav1.GetOptions{})
					if err != nil {
						return err
					}
					subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
					var names []string
					for _, s := range subjects {
						names = append(names, s.(map[string]interface{})["name"].(string))
					}
					if !slices.Contains(names, "depctrl-runtime") {
						return fmt.Errorf("group missing from binding: %v", names)
					}
					return nil
				},
			},
			{
				// Deleted outside Terraform: recreated.
				PreConfig: func() {
					check.Must(t, d.Resource(apiExportsGVR).Delete(ctx, v1alpha1.DefaultAPIExportName, metav1.DeleteOptions{}))
				},
				Config: exportConfig(e, ws.Path, `  runtime_groups = ["depctrl-runtime"]`+"\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
			},
		}),
	})
}

func TestAccExportResource_errors(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	tests := []struct {
		name   string
		config string
		want   string
	}{
		{
			name: "no runtime subjects",
			config: providerConfig(e) + `
resource "depctrl_export" "test" {
  workspace_path = "root"
}
`,
			want: `Missing Attribute Configuration[\s\S]*runtime_users,runtime_groups`,
		},
		{
			name:   "missing workspace",
			config: exportConfig(e, "root:"+env.UniqueName("absent"), ""),
			want:   `Workspace not found[\s\S]*"root:absent-[0-9a-f]+" does not\s+exist`,
		},
		{
			name:   "bad name",
			config: exportConfig(e, "root", `  name = "Not A Name"`+"\n"),
			want:   `(?s)name = "Not A Name".*lowercase DNS subdomain`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testConfigFails(t, tt.config, tt.want) })
	}
}
