package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

func workspaceConfig(e *env.Env, path string) string {
	return providerConfig(e) + fmt.Sprintf(`
data "depctrl_workspace" "test" {
  path = %q
}
`, path)
}

// expectWorkspace checks every attribute of the data source against what
// the environment recorded when it created ws.
func expectWorkspace(ws env.Workspace, typ string) []statecheck.StateCheck {
	attr := func(name string, v knownvalue.Check) statecheck.StateCheck {
		return statecheck.ExpectKnownValue("data.depctrl_workspace.test", tfjsonpath.New(name), v)
	}
	return []statecheck.StateCheck{
		attr("id", knownvalue.StringExact(ws.Path)),
		attr("path", knownvalue.StringExact(ws.Path)),
		attr("name", knownvalue.StringExact(ws.Name)),
		attr("cluster", knownvalue.StringExact(ws.Cluster)),
		attr("phase", knownvalue.StringExact("Ready")),
		attr("url", knownvalue.StringExact(ws.URL)),
		attr("type", knownvalue.StringExact(typ)),
		attr("shard", knownvalue.StringExact(ws.Shard)),
	}
}

// testWorkspaceDataSource reads ws, of type typ, with the data source and
// checks every attribute.
func testWorkspaceDataSource(t *testing.T, e *env.Env, ws env.Workspace, typ string) {
	t.Helper()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:            workspaceConfig(e, ws.Path),
			ConfigStateChecks: expectWorkspace(ws, typ),
		}},
	})
}

func TestAccWorkspaceDataSource_basic(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	root := env.Workspace{Name: "root", Path: "root", Cluster: "root", URL: e.FrontProxyURL + "/clusters/root", Shard: e.Shards[0].Name}
	testWorkspaceDataSource(t, e, root, "root:root")
}

func TestAccWorkspaceDataSource_nested(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	ctx := context.Background()
	org := env.UniqueName("org")
	ws, err := e.CreateWorkspacePath(ctx, "root:"+org+":team:network")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.DeleteWorkspace(ctx, "root:"+org) })
	testWorkspaceDataSource(t, e, ws, "root:universal")
}

func TestAccWorkspaceDataSource_secondShard(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	ctx := context.Background()
	second := e.Shards[1].Name
	ws, err := e.CreateWorkspace(ctx, "root", env.UniqueName("far"), env.OnShard(second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.DeleteWorkspace(ctx, ws.Path) })
	if ws.Shard != second {
		t.Fatalf("the environment scheduled %s on shard %q, want %q", ws.Path, ws.Shard, second)
	}

	// Children of root default to kcp's organization type.
	testWorkspaceDataSource(t, e, ws, "root:organization")
}

func TestAccWorkspaceDataSource_missing(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	org := testOrg(t, e)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      workspaceConfig(e, org.Path+":absent"),
				ExpectError: regexp.MustCompile(`Workspace not found[\s\S]*workspace "` + org.Path + `:absent" does not exist`),
			},
			{
				// The first missing step of a deeper path is named.
				Config:      workspaceConfig(e, org.Path+":absent:deeper"),
				ExpectError: regexp.MustCompile(`workspace "` + org.Path + `:absent" does not exist, so\s+"` + org.Path + `:absent:deeper" cannot exist either`),
			},
		},
	})
}

func TestAccWorkspaceDataSource_malformedPath(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	for _, path := range []string{"org:team", "root::team", "root:Team", "root:team-"} {
		t.Run(path, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      workspaceConfig(e, path),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`(?s)Invalid Attribute Value.*with data\.depctrl_workspace\.test,.*path = "` + regexp.QuoteMeta(path) + `".*must be a kcp workspace path`),
				}},
			})
		})
	}
}
