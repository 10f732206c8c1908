package provider

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

func shardConfig(e *env.Env, grant, user, extra string) string {
	cfg := providerConfig(e)
	for i, s := range e.Shards {
		cfg += fmt.Sprintf(`
resource "depctrl_shard" "s%d" {
  name            = %q
  kubeconfig_path = %q
  webhook_users   = [%q]
  grant_name      = %q
%s}
`, i, s.Name, s.AdminKubeconfig, user, grant, extra)
	}
	return cfg
}

func shardAdmin(t *testing.T, e *env.Env, shard string) dynamic.Interface {
	t.Helper()
	cfg, err := e.ShardAdminConfig(shard, systemAdminCluster)
	check.Must(t, err)
	d, err := dynamic.NewForConfig(cfg)
	check.Must(t, err)
	return d
}

func TestAccShardResource(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	ctx := context.Background()
	grant := env.UniqueName("depctrl-test") + ":reader"
	user := env.UniqueName("webhook")
	// A consumer on each shard, read through the front-proxy as the webhook
	// does.
	consumers := map[string]env.Workspace{}
	for _, s := range e.Shards {
		ws, err := e.CreateWorkspace(ctx, "root", env.UniqueName("consumer"), env.OnShard(s.Name))
		check.Must(t, err)
		t.Cleanup(func() { _ = e.DeleteWorkspace(ctx, ws.Path) })
		consumers[s.Name] = ws
	}
	id, err := e.Identity(user)
	check.Must(t, err)
	read := func(shard, what string) error {
		c, err := kubernetes.NewForConfig(e.IdentityConfig(id, consumers[shard].Path))
		check.Must(t, err)
		switch what {
		case "secrets":
			_, err = c.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
		case "patch configmaps":
			// A patch of a ConfigMap that does not exist: authorized or
			// not before the API server looks for it.
			_, err = c.CoreV1().ConfigMaps("default").Patch(ctx, "depctrl-no-such-object", types.MergePatchType, []byte("{}"), metav1.PatchOptions{})
			if apierrors.IsNotFound(err) {
				err = nil
			}
		default:
			_, err = c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		}
		return err
	}
	everyShard := func(what string, allowed bool) func(*terraform.State) error {
		return func(*terraform.State) error {
			for _, s := range e.Shards {
				err := read(s.Name, what)
				if allowed && err != nil {
					return fmt.Errorf("the webhook identity cannot read %s on shard %s: %w", what, s.Name, err)
				}
				if !allowed && !apierrors.IsForbidden(err) {
					return fmt.Errorf("the webhook identity should not read %s on shard %s, got %v", what, s.Name, err)
				}
			}
			return nil
		}
	}
	if err := everyShard("configmaps", false)(nil); err != nil {
		t.Fatalf("before the grant: %v", err)
	}
	second := shardAdmin(t, e, e.Shards[1].Name)

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			for _, s := range e.Shards {
				if _, err := shardAdmin(t, e, s.Name).Resource(clusterRolesGVR).Get(ctx, grant, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("grant left on shard %s (err=%v)", s.Name, err)
				}
			}
			return everyShard("configmaps", false)(nil)
		},
		Steps: []resource.TestStep{
			{
				Config: shardConfig(e, grant, user, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("id"), knownvalue.StringExact(e.Shards[1].Name)),
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("url"), knownvalue.StringExact(e.Shards[1].URL)),
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("base_url"), knownvalue.NotNull()),
				},
				Check: resource.ComposeTestCheckFunc(everyShard("configmaps", true), everyShard("secrets", true)),
			},
			{
				Config:           shardConfig(e, grant, user, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				ResourceName:            "depctrl_shard.s1",
				ImportState:             true,
				ImportStateId:           e.Shards[1].Name + "/" + grant + "," + e.Shards[1].AdminKubeconfig,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				// Drift: the binding on the second shard is deleted by hand.
				PreConfig: func() {
					check.Must(t, second.Resource(clusterRoleBindingsGVR).Delete(ctx, grant, metav1.DeleteOptions{}))
				},
				Config: shardConfig(e, grant, user, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("depctrl_shard.s1", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("depctrl_shard.s0", plancheck.ResourceActionNoop),
				}},
				Check: everyShard("configmaps", true),
			},
			{
				// Narrowed to what rules use: secrets are no longer readable.
				Config: shardConfig(e, grant, user, `  read_resources = ["configmaps"]`+"\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("depctrl_shard.s0", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("depctrl_shard.s0", tfjsonpath.New("rules"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact(`groups="" resources=configmaps verbs=get,list,watch`),
						knownvalue.StringExact(`groups=core.kcp.io resources=logicalclusters verbs=get`),
						knownvalue.StringExact(`groups=events.k8s.io resources=events verbs=create`),
						knownvalue.StringExact(`urls=/ verbs=access`),
					})),
				},
				Check: resource.ComposeTestCheckFunc(everyShard("configmaps", true), everyShard("secrets", false), everyShard("patch configmaps", false)),
			},
			{
				// Re-indexing: patch on exactly the named dependent
				// types; protected types are read and patched one at a time.
				Config: shardConfig(e, grant, user, `  read_resources = ["configmaps"]`+"\n"+`  protected_resources = ["services"]`+"\n"+`  reindex        = true`+"\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("depctrl_shard.s0", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("depctrl_shard.s1", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("rules"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact(`groups="" resources=configmaps verbs=get,list,watch,patch`),
						knownvalue.StringExact(`groups="" resources=services verbs=get,list,patch`),
						knownvalue.StringExact(`groups=core.kcp.io resources=logicalclusters verbs=get`),
						knownvalue.StringExact(`groups=events.k8s.io resources=events verbs=create`),
						knownvalue.StringExact(`urls=/ verbs=access`),
					})),
				},
				Check: resource.ComposeTestCheckFunc(everyShard("patch configmaps", true), everyShard("secrets", false)),
			},
			{
				// Import reads the grant back: reindex from the live role.
				ResourceName:            "depctrl_shard.s1",
				ImportState:             true,
				ImportStateId:           e.Shards[1].Name + "/" + grant + "," + e.Shards[1].AdminKubeconfig,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts", "read_resources", "protected_resources"},
			},
		},
	})
}

func TestAccShardResourceErrors(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	s := e.Shards[1]
	tests := []struct {
		name, config, want string
	}{
		{
			name: "unknown shard",
			config: providerConfig(e) + fmt.Sprintf(`
resource "depctrl_shard" "test" {
  name            = "no-such-shard"
  kubeconfig_path = %q
  webhook_users   = ["w"]
}
`, s.AdminKubeconfig),
			want: `Shard not found[\s\S]*no shard named "no-such-shard"; its shards are \[root\s+shard-1\]`,
		},
		{
			name: "front-proxy instead of the shard",
			config: providerConfig(e) + fmt.Sprintf(`
resource "depctrl_shard" "test" {
  name            = %q
  url             = %q
  kubeconfig_path = %q
  webhook_users   = ["w"]
}
`, s.Name, e.FrontProxyURL, s.AdminKubeconfig),
			want: `Not the shard's URL[\s\S]*` + regexp.QuoteMeta(e.FrontProxyURL) + ` is not the URL of shard\s+"shard-1"`,
		},
		{
			name: "no credentials",
			config: providerConfig(e) + `
resource "depctrl_shard" "test" {
  name          = "shard-1"
  webhook_users = ["w"]
}
`,
			want: `Missing Attribute Configuration[\s\S]*kubeconfig_path,client_certificate_path,client_certificate`,
		},
		{
			name: "certificate without key",
			config: providerConfig(e) + `
resource "depctrl_shard" "test" {
  name                    = "shard-1"
  client_certificate_path = "/tmp/cert.pem"
  webhook_users           = ["w"]
}
`,
			want: `Invalid Attribute Combination[\s\S]*client_key_path`,
		},
		{
			name: "malformed read resource",
			config: providerConfig(e) + fmt.Sprintf(`
resource "depctrl_shard" "test" {
  name            = "shard-1"
  kubeconfig_path = %q
  webhook_users   = ["w"]
  read_resources  = ["compute.example.io/virtualmachines"]
}
`, s.AdminKubeconfig),
			want: `(?s)read_resources.*must be resource.group`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: tt.config, ExpectError: regexp.MustCompile(tt.want)}},
			})
		})
	}
}

// TestGrantsPatch: an imported grant says reindex only when it patches
// named dependent types, not for the wildcard grant nor for protected types.
func TestGrantsPatch(t *testing.T) {
	subjects := []rbacv1.Subject{rbac.User("webhook")}
	vms := []rbac.ReadResource{{Group: "compute.example.io", Resource: "virtualmachines"}}
	vpcs := []rbac.ReadResource{{Group: "network.example.io", Resource: "vpcs"}}
	for _, tt := range []struct {
		name   string
		access rbac.ShardAccess
		want   bool
	}{
		{"wildcard", rbac.ShardAccess{}, false},
		{"narrowed", rbac.ShardAccess{Dependents: vms, Protected: vpcs}, false},
		{"narrowed with reindex", rbac.ShardAccess{Dependents: vms, Protected: vpcs, Reindex: true}, true},
	} {
		if got := grantsPatch(rbac.ShardReader(subjects, tt.access).Role.Rules); got != tt.want {
			t.Errorf("%s: grantsPatch = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestAccShardResourceContext: a shard admin kubeconfig with several
// contexts, whose current one is not the shard's: without `context` the
// apply fails, with it the grant is written, and an import ID naming the
// context reads the same state back.
func TestAccShardResourceContext(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	ctx := context.Background()
	shard := e.Shards[len(e.Shards)-1]
	grant := env.UniqueName("depctrl-test") + ":reader"
	user := env.UniqueName("webhook")

	// The shard's admin kubeconfig, with its context renamed and a current
	// context that points nowhere.
	cfg, err := clientcmd.LoadFromFile(shard.AdminKubeconfig)
	check.Must(t, err)
	admin := cfg.Contexts[cfg.CurrentContext]
	cfg.Contexts = map[string]*clientcmdapi.Context{
		"system-masters": admin,
		"elsewhere":      {Cluster: "nowhere", AuthInfo: admin.AuthInfo},
	}
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.CurrentContext = "elsewhere"
	kubeconfig := filepath.Join(t.TempDir(), "shard.kubeconfig")
	check.Must(t, clientcmd.WriteToFile(*cfg, kubeconfig))

	config := func(extra string) string {
		return providerConfig(e) + fmt.Sprintf(`
resource "depctrl_shard" "this" {
  name            = %q
  kubeconfig_path = %q
  webhook_users   = [%q]
  grant_name      = %q
%s}
`, shard.Name, kubeconfig, user, grant, extra)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if _, err := shardAdmin(t, e, shard.Name).Resource(clusterRolesGVR).Get(ctx, grant, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("grant left on shard %s (err=%v)", shard.Name, err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				// The current context's server is not the shard.
				Config:      config(""),
				ExpectError: regexp.MustCompile(`127\.0\.0\.1:1`),
			},
			{
				Config: config(`  context = "system-masters"` + "\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("depctrl_shard.this", tfjsonpath.New("context"), knownvalue.StringExact("system-masters")),
					statecheck.ExpectKnownValue("depctrl_shard.this", tfjsonpath.New("url"), knownvalue.StringExact(shard.URL)),
				},
				Check: func(*terraform.State) error {
					_, err := shardAdmin(t, e, shard.Name).Resource(clusterRolesGVR).Get(ctx, grant, metav1.GetOptions{})
					return err
				},
			},
			{
				ResourceName:            "depctrl_shard.this",
				ImportState:             true,
				ImportStateId:           shard.Name + "/" + grant + "," + kubeconfig + ",context=system-masters",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})
}
