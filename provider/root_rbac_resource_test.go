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
	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

func rootRBACConfig(e *env.Env, name, user string, parents ...string) string {
	list := ""
	for _, p := range parents {
		list += fmt.Sprintf("%q, ", p)
	}
	return providerConfig(e) + fmt.Sprintf(`
resource "depctrl_root_rbac" "test" {
  name             = %q
  controller_users = [%q]
  parent_paths     = [%s]
}
`, name, user, list)
}

func TestAccRootRBACResource_basic(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	ctx := context.Background()
	org := testOrg(t, e)
	if _, err := e.CreateWorkspace(ctx, org.Path, "team"); err != nil {
		t.Fatal(err)
	}
	// A name and a user of its own, so that the grant does not disturb
	// other tests that share root.
	name := env.UniqueName("depctrl-test") + ":workspace-reader"
	user := env.UniqueName("controller")
	addr := "depctrl_root_rbac.test"
	root, inOrg := adminDynamic(t, e, "root"), adminDynamic(t, e, org.Path)

	id, err := e.Identity(user)
	check.Must(t, err)
	controller, err := kcpclientset.NewForConfig(func() *rest.Config {
		cfg := e.IdentityConfig(id, "root")
		cfg.Host = e.FrontProxyURL
		return cfg
	}())
	check.Must(t, err)
	// canResolve is what the controller does with the grant: read the
	// Workspace objects along a path.
	canResolve := func(parent string) error {
		_, err := controller.Cluster(logicalcluster.NewPath(parent)).TenancyV1alpha1().Workspaces().List(ctx, metav1.ListOptions{})
		return err
	}
	exists := func(path string) func() error {
		return func() error {
			d := adminDynamic(t, e, path)
			if _, err := d.Resource(clusterRolesGVR).Get(ctx, name, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("ClusterRole in %s: %w", path, err)
			}
			if _, err := d.Resource(clusterRoleBindingsGVR).Get(ctx, name, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("ClusterRoleBinding in %s: %w", path, err)
			}
			return nil
		}
	}
	gone := func(path string) error {
		d := adminDynamic(t, e, path)
		if _, err := d.Resource(clusterRolesGVR).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterRole %s left in %s (err=%v)", name, path, err)
		}
		if _, err := d.Resource(clusterRoleBindingsGVR).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterRoleBinding %s left in %s (err=%v)", name, path, err)
		}
		return nil
	}
	if err := canResolve(org.Path); !apierrors.IsForbidden(err) {
		t.Fatalf("before the grant the controller identity must not read workspaces in %s, got %v", org.Path, err)
	}
	// In root it may already: kcp binds system:kcp:tenancy:reader and
	// workspace access there to every authenticated user, which is all the
	// grant in root gives (the resource's documentation says so).
	if err := canResolve("root"); err != nil {
		t.Fatalf("before the grant the controller identity should read workspaces in root, as every authenticated user may: %v", err)
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if err := gone("root"); err != nil {
				return err
			}
			return gone(org.Path)
		},
		Steps: slices.Concat([]resource.TestStep{
			{
				Config: rootRBACConfig(e, name, user, org.Path),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("root,"+org.Path+"/"+name)),
				},
				Check: func(*terraform.State) error {
					for _, p := range []string{"root", org.Path} {
						if err := exists(p)(); err != nil {
							return err
						}
					}
					// The grant works: the controller identity now reads
					// workspaces in the intermediate workspace.
					return canResolve(org.Path)
				},
			},
			{
				Config:           rootRBACConfig(e, name, user, org.Path),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			importVerified(addr, "root,"+org.Path+"/"+name),
			importPlansNothing(addr, "root,"+org.Path+"/"+name),
		}, identitySteps(t,
			// The identity names the grant and the workspaces besides root that
			// hold it, and an import block may give it instead of the ID.
			expectIdentity(rootRBACConfig(e, name, user, org.Path), addr, map[string]knownvalue.Check{
				"name":         knownvalue.StringExact(name),
				"parent_paths": knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(org.Path)}),
			}),
			importByIdentityPlansNothing(addr),
		), []resource.TestStep{
			{
				// Drift: the grant in the org is deleted and root's role is
				// narrowed by hand.
				PreConfig: func() {
					check.Must(t, inOrg.Resource(clusterRoleBindingsGVR).Delete(ctx, name, metav1.DeleteOptions{}))
					role, err := root.Resource(clusterRolesGVR).Get(ctx, name, metav1.GetOptions{})
					check.Must(t, err)
					rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
					check.Must(t, unstructured.SetNestedSlice(role.Object, rules[:1], "rules"))
					_, err = root.Resource(clusterRolesGVR).Update(ctx, role, metav1.UpdateOptions{})
					check.Must(t, err)
				},
				Config: rootRBACConfig(e, name, user, org.Path),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					if err := exists(org.Path)(); err != nil {
						return err
					}
					return canResolve(org.Path)
				},
			},
			{
				// Drift: the binding in root is deleted by hand. The grant
				// in root is gone, so the plan creates it again, with the
				// configuration's values: parent_paths, whose grant is
				// intact, and controller_users show no change.
				PreConfig: func() {
					check.Must(t, root.Resource(clusterRoleBindingsGVR).Delete(ctx, name, metav1.DeleteOptions{}))
				},
				Config: rootRBACConfig(e, name, user, org.Path),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("parent_paths"), knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact(org.Path)})),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("controller_users"), knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact(user)})),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("root,"+org.Path+"/"+name)),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: func(*terraform.State) error {
					for _, p := range []string{"root", org.Path} {
						if err := exists(p)(); err != nil {
							return err
						}
					}
					return canResolve(org.Path)
				},
			},
			{
				// The org leaves parent_paths: its grant is revoked.
				Config: rootRBACConfig(e, name, user),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					if err := exists("root")(); err != nil {
						return err
					}
					return gone(org.Path)
				},
			},
		}, identitySteps(t,
			// With parent_paths, the identity changes: root alone holds the
			// grant now, and an import block that says so imports it.
			expectIdentity(rootRBACConfig(e, name, user), addr, map[string]knownvalue.Check{
				"name":         knownvalue.StringExact(name),
				"parent_paths": knownvalue.ListSizeExact(0),
			}),
			importByIdentityPlansNothing(addr),
		)),
	})
}
