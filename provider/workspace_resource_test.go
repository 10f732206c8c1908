package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
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

	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

func workspaceResourceConfig(e *env.Env, parent, name, extra string) string {
	return providerConfig(e) + fmt.Sprintf(`
resource "depctrl_workspace" "test" {
  name        = %q
  parent_path = %q
%s}
`, name, parent, extra)
}

func adminKCP(t *testing.T, e *env.Env) kcpclientset.ClusterInterface {
	t.Helper()
	cfg, err := e.AdminConfig("root")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = e.FrontProxyURL
	c, err := kcpclientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testOrg creates a workspace below root for one test and removes it after.
func testOrg(t *testing.T, e *env.Env) env.Workspace {
	t.Helper()
	ctx := context.Background()
	org, err := e.CreateWorkspace(ctx, "root", env.UniqueName("org"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.DeleteWorkspace(ctx, org.Path) })
	return org
}

func TestAccWorkspaceResource_basic(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	org := testOrg(t, e)
	kcp := adminKCP(t, e)
	addr := "depctrl_workspace.test"
	attr := func(name string, v knownvalue.Check) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(addr, tfjsonpath.New(name), v)
	}
	clusterOf := func(name string) string {
		ws, err := kcp.Cluster(logicalcluster.NewPath(org.Path)).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading workspace %s: %v", name, err)
		}
		return ws.Spec.Cluster
	}
	var firstCluster string

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			for _, name := range []string{"team", "renamed"} {
				_, err := kcp.Cluster(logicalcluster.NewPath(org.Path)).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
				if !apierrors.IsNotFound(err) {
					return fmt.Errorf("workspace %s:%s still there after destroy (err=%v)", org.Path, name, err)
				}
			}
			return nil
		},
		Steps: slices.Concat([]resource.TestStep{
			{
				Config: workspaceResourceConfig(e, org.Path, "team", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("cluster")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					attr("id", knownvalue.StringExact(org.Path+":team")),
					attr("path", knownvalue.StringExact(org.Path+":team")),
					attr("phase", knownvalue.StringExact("Ready")),
					attr("type", knownvalue.StringExact("root:universal")),
					attr("shard", knownvalue.StringRegexp(shardNameRE(e))),
					attr("cluster", knownvalue.StringRegexp(regexp.MustCompile(`^[a-z0-9]{16}$`))),
					attr("url", knownvalue.StringExact(e.FrontProxyURL+"/clusters/"+org.Path+":team")),
				},
				Check: func(s *terraform.State) error {
					attrs := s.RootModule().Resources[addr].Primary.Attributes
					firstCluster = attrs["cluster"]
					if got := clusterOf("team"); got != firstCluster {
						return fmt.Errorf("state says cluster %s, kcp says %s", firstCluster, got)
					}
					ws, err := kcp.Cluster(logicalcluster.NewPath(org.Path)).TenancyV1alpha1().Workspaces().Get(context.Background(), "team", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if want := ws.Annotations["core.kcp.io/shard"]; attrs["shard"] != want {
						return fmt.Errorf("state says shard %s, kcp says %s", attrs["shard"], want)
					}
					return nil
				},
			},
			{
				// Nothing changes on a second plan: server-added metadata
				// never shows up as a diff.
				Config: workspaceResourceConfig(e, org.Path, "team", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
			importVerified(addr, org.Path+":team"),
			// The same through an import block, planned like any change.
			importPlansNothing(addr, org.Path+":team"),
		}, identitySteps(t,
			// The identity names the workspace by its path, and an import
			// block may give it instead of the ID.
			expectIdentity(workspaceResourceConfig(e, org.Path, "team", ""), addr, map[string]knownvalue.Check{
				"path": knownvalue.StringExact(org.Path + ":team"),
			}),
			importByIdentityPlansNothing(addr),
		), []resource.TestStep{
			{
				// Drift: the workspace is deleted outside Terraform, and
				// apply creates it again.
				PreConfig: func() {
					if err := e.DeleteWorkspace(context.Background(), org.Path+":team"); err != nil {
						t.Fatal(err)
					}
				},
				Config: workspaceResourceConfig(e, org.Path, "team", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: func(s *terraform.State) error {
					if got := s.RootModule().Resources[addr].Primary.Attributes["cluster"]; got == firstCluster {
						return fmt.Errorf("the recreated workspace kept logical cluster %s", got)
					}
					return nil
				},
			},
			{
				// Inputs are fixed at creation: a new name or type replaces
				// the workspace.
				Config: workspaceResourceConfig(e, org.Path, "renamed", `  type = "root:universal"
  timeouts {
    create = "2m"
  }
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					attr("path", knownvalue.StringExact(org.Path+":renamed")),
				},
			},
		}),
	})
}

func TestAccWorkspaceResource_secondShard(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	org := testOrg(t, e)
	second := e.Shards[1].Name
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: workspaceResourceConfig(e, org.Path, "far", fmt.Sprintf("  shard_selector = { name = %q }\n", second)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("depctrl_workspace.test", tfjsonpath.New("shard"), knownvalue.StringExact(second)),
			},
		}},
	})
}

func TestAccWorkspaceResource_errors(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	org := testOrg(t, e)
	if _, err := e.CreateWorkspace(context.Background(), org.Path, "taken"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		config string
		want   string
	}{
		{
			name:   "missing parent",
			config: workspaceResourceConfig(e, org.Path+":absent", "child", ""),
			want:   `Parent workspace not found[\s\S]*workspace "` + org.Path + `:absent" does not exist`,
		},
		{
			name:   "already exists",
			config: workspaceResourceConfig(e, org.Path, "taken", ""),
			want:   `Workspace already exists[\s\S]*terraform import <address> ` + org.Path + `:taken`,
		},
		{
			name:   "invalid name",
			config: workspaceResourceConfig(e, org.Path, "Not_A_Name", ""),
			want:   `(?s)Invalid Attribute Value Match.*name\s+= "Not_A_Name".*must consist of lowercase letters`,
		},
		{
			name:   "invalid parent path",
			config: workspaceResourceConfig(e, "org:team", "child", ""),
			want:   `(?s)parent_path = "org:team".*must be a kcp workspace path`,
		},
		{
			name:   "type without path",
			config: workspaceResourceConfig(e, org.Path, "child", `  type = "universal"`+"\n"),
			want:   `(?s)type = "universal".*such as root:universal`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testConfigFails(t, tt.config, tt.want) })
	}
}

// shardNameRE matches the name of any shard of e.
func shardNameRE(e *env.Env) *regexp.Regexp {
	names := make([]string, len(e.Shards))
	for i, s := range e.Shards {
		names[i] = regexp.QuoteMeta(s.Name)
	}
	return regexp.MustCompile("^(" + strings.Join(names, "|") + ")$")
}
