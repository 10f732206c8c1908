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

func TestAccWorkspaceDataSourceRoot(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	root := env.Workspace{Name: "root", Path: "root", Cluster: "root", URL: e.FrontProxyURL + "/clusters/root", Shard: e.Shards[0].Name}
	testWorkspaceDataSource(t, e, root, "root:root")
}

func TestAccWorkspaceDataSourceNested(t *testing.T) {
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

func TestAccWorkspaceDataSourceSecondShard(t *testing.T) {
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

func TestAccWorkspaceDataSourceMissing(t *testing.T) {
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

func TestAccWorkspaceDataSourceMalformedPath(t *testing.T) {
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

func TestAccProviderConfigurationErrors(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	ctx := context.Background()
	ports, err := env.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	orgPath := "root:" + env.UniqueName("org")
	org, err := e.CreateWorkspacePath(ctx, orgPath+":team")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.DeleteWorkspace(ctx, orgPath) })
	stranger, err := e.Identity("stranger")
	if err != nil {
		t.Fatal(err)
	}
	strangerKubeconfig, err := e.IdentityKubeconfig(stranger, "root")
	if err != nil {
		t.Fatal(err)
	}

	data := `
data "depctrl_workspace" "test" {
  path = "` + org.Path + `"
}
`
	tests := []struct {
		name     string
		provider string
		want     string
	}{
		{
			name:     "nothing configured",
			provider: `provider "depctrl" {}`,
			want:     `No kcp connection configured[\s\S]*set kubeconfig_path, kubeconfig_raw or host`,
		},
		{
			name: "unreachable host",
			provider: fmt.Sprintf(`provider "depctrl" {
  host                     = "https://127.0.0.1:%d"
  token                    = "anything"
  insecure_skip_tls_verify = true
}`, ports[0]),
			want: fmt.Sprintf(`cannot reach kcp at\s+https://127.0.0.1:%d`, ports[0]),
		},
		{
			name: "bad credentials",
			provider: fmt.Sprintf(`provider "depctrl" {
  host                   = %q
  token                  = "not-a-valid-token"
  cluster_ca_certificate = file(%q)
}`, e.FrontProxyURL, e.CAFile),
			want: `rejected the credentials \(401\s+Unauthorized\)`,
		},
		{
			name: "untrusted certificate",
			provider: fmt.Sprintf(`provider "depctrl" {
  host  = %q
  token = "anything"
}`, e.FrontProxyURL),
			want: `TLS certificate of\s+https://127.0.0.1:\d+ could not be verified`,
		},
		{
			name: "identity without access",
			provider: fmt.Sprintf(`provider "depctrl" {
  kubeconfig_raw = %q
}`, strangerKubeconfig),
			want: `403 Forbidden[\s\S]*needs RBAC`,
		},
		{
			name: "client certificate without key",
			provider: fmt.Sprintf(`provider "depctrl" {
  host               = %q
  client_certificate = "pem"
}`, e.FrontProxyURL),
			want: `Incomplete client certificate[\s\S]*client_certificate and client_key must be set together`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testConfigFails(t, tt.provider+"\n"+data, tt.want) })
	}
}

func TestAccProviderConfigurationUnknown(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	// The host comes from a resource that does not exist before apply, as
	// when kcp itself is created in the same configuration.
	config := `
resource "terraform_data" "kcp" {
  input = "` + e.FrontProxyURL + `"
}

provider "depctrl" {
  host  = terraform_data.kcp.output
  token = "anything"
}

data "depctrl_workspace" "test" {
  path = "root"
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      config,
			ExpectError: regexp.MustCompile(`Provider configuration not known yet[\s\S]*not known until apply`),
		}},
	})
}

func TestAccShardsDataSource(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	var shards []knownvalue.Check
	for _, s := range e.Shards {
		shards = append(shards, knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"name":     knownvalue.StringExact(s.Name),
			"base_url": knownvalue.StringRegexp(regexp.MustCompile(`^https://`)),
		}))
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: providerConfig(e) + "\ndata \"depctrl_shards\" \"all\" {}\n",
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.depctrl_shards.all", tfjsonpath.New("shards"), knownvalue.ListExact(shards)),
			},
		}},
	})
}
