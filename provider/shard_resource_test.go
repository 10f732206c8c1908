package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// shardConfig is the provider and, on every shard of e, a depctrl_shard
// s<i> as shardHCL writes it.
func shardConfig(e *env.Env, grant, user, extra string) string {
	cfg := providerConfig(e)
	for i, s := range e.Shards {
		cfg += shardHCL(fmt.Sprintf("s%d", i), s.Name, s.AdminKubeconfig, user, grant, extra)
	}
	return cfg
}

// shardHCL is the depctrl_shard label that grants user, as grant, on the
// shard name reached with kubeconfig; extra adds attributes.
func shardHCL(label, name, kubeconfig, user, grant, extra string) string {
	return fmt.Sprintf(`
resource "depctrl_shard" %q {
  name            = %q
  kubeconfig_path = %q
  webhook_users   = [%q]
  grant_name      = %q
%s}
`, label, name, kubeconfig, user, grant, extra)
}

func shardAdmin(t *testing.T, e *env.Env, shard string) dynamic.Interface {
	t.Helper()
	cfg, err := e.ShardAdminConfig(shard, systemAdminCluster)
	check.Must(t, err)
	d, err := dynamic.NewForConfig(cfg)
	check.Must(t, err)
	return d
}

// grantRemoved is a CheckDestroy: the ClusterRole grant is gone from each
// of shards.
func grantRemoved(ctx context.Context, t *testing.T, e *env.Env, grant string, shards ...env.Shard) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, s := range shards {
			if _, err := shardAdmin(t, e, s.Name).Resource(clusterRolesGVR).Get(ctx, grant, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("grant left on shard %s (err=%v)", s.Name, err)
			}
		}
		return nil
	}
}

func TestAccShardResource_basic(t *testing.T) {
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
		case "delete services", "delete configmaps":
			// A delete of an object that does not exist, as for patch.
			if what == "delete services" {
				err = c.CoreV1().Services("default").Delete(ctx, "depctrl-no-such-object", metav1.DeleteOptions{})
			} else {
				err = c.CoreV1().ConfigMaps("default").Delete(ctx, "depctrl-no-such-object", metav1.DeleteOptions{})
			}
			if apierrors.IsNotFound(err) {
				err = nil
			}
		case "review access":
			// What a deferred deletion asks before it is carried out.
			_, err = c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               "someone",
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Version: "v1", Resource: "services", Namespace: "default", Name: "depctrl-no-such-object"},
			}}, metav1.CreateOptions{})
		case "get namespaces":
			_, err = c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
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
	s1ID := e.Shards[1].Name + "/" + grant + "," + e.Shards[1].AdminKubeconfig // the import ID of depctrl_shard.s1
	reindexed := `  read_resources = ["endpoints", "configmaps"]` + "\n" + `  protected_resources = ["services"]` + "\n" + `  reindex        = true` + "\n"
	deferring := reindexed + `  deferred_deletion = true` + "\n"

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(grantRemoved(ctx, t, e, grant, e.Shards...), everyShard("configmaps", false)),
		Steps: slices.Concat([]resource.TestStep{
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
			importVerified("depctrl_shard.s1", s1ID),
			importPlansNothing("depctrl_shard.s1", s1ID),
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
				// Narrowed to what rules use: secrets are no longer readable,
				// and only the protected type may be patched.
				Config: shardConfig(e, grant, user, `  read_resources = ["configmaps"]`+"\n"+`  protected_resources = ["services"]`+"\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("depctrl_shard.s0", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("depctrl_shard.s0", tfjsonpath.New("rules"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact(`groups="" resources=configmaps verbs=get,list,watch`),
						knownvalue.StringExact(`groups="" resources=services verbs=get,list,patch`),
						knownvalue.StringExact(`groups=apis.kcp.io resources=apibindings verbs=list`),
						knownvalue.StringExact(`groups=core.kcp.io resources=logicalclusters verbs=get`),
						knownvalue.StringExact(`groups=events.k8s.io resources=events verbs=create`),
						knownvalue.StringExact(`groups=tenancy.kcp.io resources=workspaces verbs=list`),
						knownvalue.StringExact(`urls=/ verbs=access`),
					})),
				},
				Check: resource.ComposeTestCheckFunc(everyShard("configmaps", true), everyShard("secrets", false), everyShard("patch configmaps", false)),
			},
			{
				// Re-indexing: patch on exactly the named dependent
				// types; protected types are read and patched one at a time.
				// The types in an order of their own: the grant is the same.
				Config: shardConfig(e, grant, user, reindexed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("depctrl_shard.s0", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("depctrl_shard.s1", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("rules"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact(`groups="" resources=configmaps,endpoints verbs=get,list,watch,patch`),
						knownvalue.StringExact(`groups="" resources=services verbs=get,list,patch`),
						knownvalue.StringExact(`groups=apis.kcp.io resources=apibindings verbs=list`),
						knownvalue.StringExact(`groups=core.kcp.io resources=logicalclusters verbs=get`),
						knownvalue.StringExact(`groups=events.k8s.io resources=events verbs=create`),
						knownvalue.StringExact(`groups=tenancy.kcp.io resources=workspaces verbs=list`),
						knownvalue.StringExact(`urls=/ verbs=access`),
					})),
				},
				Check: resource.ComposeTestCheckFunc(everyShard("patch configmaps", true), everyShard("secrets", false)),
			},
			// Import reads the whole grant back: the types and reindex
			// from the live role, the subjects from its binding.
			importVerified("depctrl_shard.s1", s1ID),
			importPlansNothing("depctrl_shard.s1", s1ID),
		}, identitySteps(t,
			// The identity names the grant by its shard and name; where the
			// credentials are is not part of it.
			expectIdentity(shardConfig(e, grant, user, reindexed), "depctrl_shard.s1", map[string]knownvalue.Check{
				"name":                    knownvalue.StringExact(e.Shards[1].Name),
				"grant_name":              knownvalue.StringExact(grant),
				"kubeconfig_path":         knownvalue.Null(),
				"context":                 knownvalue.Null(),
				"client_certificate_path": knownvalue.Null(),
				"client_key_path":         knownvalue.Null(),
				"ca_certificate_path":     knownvalue.Null(),
				"url":                     knownvalue.Null(),
			}),
			// An import block adds them, as the import ID does.
			importByIdentityBlockPlansNothing("depctrl_shard.s1", shardConfig(e, grant, user, reindexed), map[string]string{
				"name":            e.Shards[1].Name,
				"grant_name":      grant,
				"kubeconfig_path": e.Shards[1].AdminKubeconfig,
			}),
		), []resource.TestStep{
			{
				// Drift: a type removed from the role by hand shows as
				// the attribute that asked for it, and apply restores it.
				PreConfig: func() {
					var role rbacv1.ClusterRole
					_, err := getObject(ctx, second, clusterRolesGVR, grant, &role)
					check.Must(t, err)
					for i, r := range role.Rules {
						if slices.Contains(r.Resources, "services") {
							role.Rules = slices.Delete(role.Rules, i, i+1)
							break
						}
					}
					u, err := toUnstructured(&role)
					check.Must(t, err)
					_, err = second.Resource(clusterRolesGVR).Update(ctx, &unstructured.Unstructured{Object: u}, metav1.UpdateOptions{})
					check.Must(t, err)
				},
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckNoResourceAttr("depctrl_shard.s1", "protected_resources.#"),
					resource.TestCheckResourceAttr("depctrl_shard.s1", "read_resources.#", "2"),
					resource.TestCheckResourceAttr("depctrl_shard.s0", "protected_resources.#", "1"),
				),
			},
			{
				Config: shardConfig(e, grant, user, reindexed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("depctrl_shard.s1", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("depctrl_shard.s0", plancheck.ResourceActionNoop),
				}},
			},
			{
				Config:           shardConfig(e, grant, user, reindexed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Deferred deletion: delete on the protected type only,
				// SubjectAccessReviews, and Namespaces read one at a time.
				Config: shardConfig(e, grant, user, deferring),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("depctrl_shard.s0", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("depctrl_shard.s1", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("deferred_deletion"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("rules"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact(`groups="" resources=configmaps,endpoints verbs=get,list,watch,patch`),
						knownvalue.StringExact(`groups="" resources=namespaces verbs=get`),
						knownvalue.StringExact(`groups="" resources=services verbs=get,list,patch,delete`),
						knownvalue.StringExact(`groups=apis.kcp.io resources=apibindings verbs=list`),
						knownvalue.StringExact(`groups=authorization.k8s.io resources=subjectaccessreviews verbs=create`),
						knownvalue.StringExact(`groups=core.kcp.io resources=logicalclusters verbs=get`),
						knownvalue.StringExact(`groups=events.k8s.io resources=events verbs=create`),
						knownvalue.StringExact(`groups=tenancy.kcp.io resources=workspaces verbs=list`),
						knownvalue.StringExact(`urls=/ verbs=access`),
					})),
				},
				Check: resource.ComposeTestCheckFunc(
					everyShard("delete services", true), everyShard("review access", true), everyShard("get namespaces", true),
					everyShard("delete configmaps", false), everyShard("secrets", false),
				),
			},
			// Import reads deferred deletion back from the live role.
			importVerified("depctrl_shard.s1", s1ID),
			importPlansNothing("depctrl_shard.s1", s1ID),
			{
				// Drift: a part of the grant removed by hand shows as
				// deferred_deletion not granted, and apply restores it.
				PreConfig: func() {
					var role rbacv1.ClusterRole
					_, err := getObject(ctx, second, clusterRolesGVR, grant, &role)
					check.Must(t, err)
					role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "subjectaccessreviews") })
					u, err := toUnstructured(&role)
					check.Must(t, err)
					_, err = second.Resource(clusterRolesGVR).Update(ctx, &unstructured.Unstructured{Object: u}, metav1.UpdateOptions{})
					check.Must(t, err)
				},
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr("depctrl_shard.s1", "deferred_deletion", "false"),
					resource.TestCheckResourceAttr("depctrl_shard.s1", "protected_resources.#", "1"),
					resource.TestCheckResourceAttr("depctrl_shard.s0", "deferred_deletion", "true"),
				),
			},
			{
				Config: shardConfig(e, grant, user, deferring),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("depctrl_shard.s1", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("depctrl_shard.s0", plancheck.ResourceActionNoop),
				}},
				Check: everyShard("review access", true),
			},
			{
				// Off again (the default): the webhook may delete nothing.
				Config: shardConfig(e, grant, user, reindexed),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("deferred_deletion"), knownvalue.Bool(false)),
				},
				Check: everyShard("delete services", false),
			},
			{
				// Deferred deletion with the wildcard grant: it reads
				// and patches everything, and deletes the protected
				// types alone.
				Config: shardConfig(e, grant, user, `  protected_resources = ["services"]`+"\n"+`  deferred_deletion = true`+"\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("deferred_deletion"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("read_resources"), knownvalue.Null()),
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("protected_resources"), knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("services")})),
				},
				Check: resource.ComposeTestCheckFunc(
					everyShard("delete services", true), everyShard("review access", true),
					everyShard("delete configmaps", false), everyShard("secrets", true),
				),
			},
			importVerified("depctrl_shard.s1", s1ID),
			importPlansNothing("depctrl_shard.s1", s1ID),
		}),
	})
}

func TestAccShardResource_errors(t *testing.T) {
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
			want: `No shard credentials[\s\S]*no credentials for shard "shard-1"[\s\S]*shard_credentials`,
		},
		{
			name: "provider credentials for another shard only",
			config: providerWithShardCredentials(e, `    root = { kubeconfig_path = "/tmp/root.kubeconfig" }`) + `
resource "depctrl_shard" "test" {
  name          = "shard-1"
  webhook_users = ["w"]
}
`,
			want: `No shard credentials[\s\S]*no credentials for shard "shard-1"`,
		},
		{
			name:   "provider credentials that authenticate nothing",
			config: providerWithShardCredentials(e, `    shard-1 = { cluster_ca_certificate = "x" }`) + "data \"depctrl_shards\" \"all\" {}\n",
			want:   `No shard credentials[\s\S]*shard-1[\s\S]*sets\s+nothing\s+that\s+authenticates`,
		},
		{
			name:   "provider credentials with a certificate but no key",
			config: providerWithShardCredentials(e, `    shard-1 = { client_certificate = "x" }`) + "data \"depctrl_shards\" \"all\" {}\n",
			want:   `(?s)client_key.*must\s+be\s+specified\s+when`,
		},
		{
			name:   "provider credentials under a name no shard can have",
			config: providerWithShardCredentials(e, `    Shard_1 = { token = "x" }`) + "data \"depctrl_shards\" \"all\" {}\n",
			want:   `(?s)shard_credentials.*must\s+be\s+a\s+Shard\s+object\s+name`,
		},
		{
			name:   "provider credentials with a context but no kubeconfig",
			config: providerWithShardCredentials(e, `    shard-1 = { token = "x", context = "admin" }`) + "data \"depctrl_shards\" \"all\" {}\n",
			want:   `Context without a kubeconfig[\s\S]*set\s+kubeconfig_path\s+or\s+kubeconfig_raw`,
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
  protected_resources = ["vpcs.network.example.io"]
}
`, s.AdminKubeconfig),
			want: `(?s)read_resources.*must be\s+resource.group`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testConfigFails(t, tt.config, tt.want) })
	}
}

// TestShardAccessFrom: what a grant was asked for is read back from the
// role it rendered, whatever the order it was asked in.
func TestShardAccessFrom(t *testing.T) {
	subjects := []rbacv1.Subject{rbac.User("webhook")}
	vms := rbac.ReadResource{Group: "compute.example.io", Resource: "virtualmachines"}
	dbs := rbac.ReadResource{Group: "compute.example.io", Resource: "manageddatabases"}
	cms := rbac.ReadResource{Resource: "configmaps"}
	vpcs := rbac.ReadResource{Group: "network.example.io", Resource: "vpcs"}
	group := rbac.ReadResource{Group: "database.example.io", Resource: "*"}
	for _, tt := range []struct {
		name            string
		access          rbac.ShardAccess
		narrowed        bool
		read, protected []string
	}{
		{name: "wildcard", access: rbac.ShardAccess{}},
		{name: "narrowed", access: rbac.ShardAccess{Dependents: []rbac.ReadResource{vms, cms, dbs}, Protected: []rbac.ReadResource{vpcs}}, narrowed: true,
			read: []string{"configmaps", "manageddatabases.compute.example.io", "virtualmachines.compute.example.io"}, protected: []string{"vpcs.network.example.io"}},
		{name: "narrowed with reindex", access: rbac.ShardAccess{Dependents: []rbac.ReadResource{group, vms}, Reindex: true}, narrowed: true,
			read: []string{"*.database.example.io", "virtualmachines.compute.example.io"}},
		{name: "a type both read and protected", access: rbac.ShardAccess{Dependents: []rbac.ReadResource{vpcs}, Protected: []rbac.ReadResource{vpcs}, Reindex: true}, narrowed: true,
			read: []string{"vpcs.network.example.io"}, protected: []string{"vpcs.network.example.io"}},
		{name: "wildcard with deferred deletion", access: rbac.ShardAccess{Protected: []rbac.ReadResource{vpcs, cms}, DeferredDeletion: true},
			protected: []string{"configmaps", "vpcs.network.example.io"}},
		{name: "narrowed with deferred deletion", access: rbac.ShardAccess{Dependents: []rbac.ReadResource{vms}, Protected: []rbac.ReadResource{vpcs, cms}, DeferredDeletion: true}, narrowed: true,
			read: []string{"virtualmachines.compute.example.io"}, protected: []string{"configmaps", "vpcs.network.example.io"}},
		{
			// The Namespaces rule of deferred deletion is no dependent
			// type, nor is a dependent type deletable.
			name:   "deferred deletion with namespaces read and a type both read and protected",
			access: rbac.ShardAccess{Dependents: []rbac.ReadResource{vpcs, {Resource: "namespaces"}}, Protected: []rbac.ReadResource{vpcs}, Reindex: true, DeferredDeletion: true}, narrowed: true,
			read: []string{"namespaces", "vpcs.network.example.io"}, protected: []string{"vpcs.network.example.io"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, narrowed := shardAccessFrom(rbac.ShardReader(subjects, tt.access).Role.Rules)
			if narrowed != tt.narrowed || got.Reindex != tt.access.Reindex || got.DeferredDeletion != tt.access.DeferredDeletion {
				t.Fatalf("narrowed = %v, reindex = %v, deferred deletion = %v; want %v, %v, %v",
					narrowed, got.Reindex, got.DeferredDeletion, tt.narrowed, tt.access.Reindex, tt.access.DeferredDeletion)
			}
			for _, c := range []struct {
				what string
				got  []rbac.ReadResource
				want []string
			}{{"read_resources", got.Dependents, tt.read}, {"protected_resources", got.Protected, tt.protected}} {
				set := readResourceSet(c.got)
				var names []string
				_ = set.ElementsAs(context.Background(), &names, false)
				slices.Sort(names)
				if !slices.Equal(names, c.want) || (len(c.want) == 0) != set.IsNull() {
					t.Errorf("%s = %v, want %v", c.what, set, c.want)
				}
			}
		})
	}
}

// TestShardAccessFromDeferredDeletionRemoved: deferred deletion reads back
// as granted only while the role holds every rule it adds; any of them
// removed or narrowed by hand reads as not granted (so the plan shows
// deferred_deletion to be granted again), and leaves what else was asked
// for as it was.
func TestShardAccessFromDeferredDeletionRemoved(t *testing.T) {
	subjects := []rbacv1.Subject{rbac.User("webhook")}
	vms := rbac.ReadResource{Group: "compute.example.io", Resource: "virtualmachines"}
	vpcs := rbac.ReadResource{Group: "network.example.io", Resource: "vpcs"}
	cms := rbac.ReadResource{Resource: "configmaps"}
	narrowed := rbac.ShardAccess{Dependents: []rbac.ReadResource{vms}, Protected: []rbac.ReadResource{vpcs, cms}, DeferredDeletion: true}
	wildcard := rbac.ShardAccess{Protected: []rbac.ReadResource{vpcs, cms}, DeferredDeletion: true}
	// without removes the rules match selects.
	without := func(match func(rbacv1.PolicyRule) bool) func([]rbacv1.PolicyRule) []rbacv1.PolicyRule {
		return func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
			return slices.DeleteFunc(rules, match)
		}
	}
	// withoutDelete takes the delete verb from the rules match selects.
	withoutDelete := func(match func(rbacv1.PolicyRule) bool) func([]rbacv1.PolicyRule) []rbacv1.PolicyRule {
		return func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
			for i, r := range rules {
				if match(r) {
					rules[i].Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "delete" })
				}
			}
			return rules
		}
	}
	reviews := func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "subjectaccessreviews") }
	namespaces := func(r rbacv1.PolicyRule) bool { return slices.Equal(r.Resources, []string{"namespaces"}) }
	core := func(r rbacv1.PolicyRule) bool { return slices.Equal(r.APIGroups, []string{""}) }
	everything := func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "*") }
	for _, tt := range []struct {
		name   string
		access rbac.ShardAccess
		edit   func([]rbacv1.PolicyRule) []rbacv1.PolicyRule
		want   bool
		// protectedLeft is how many protected types are read back,
		// when not all of them.
		protectedLeft int
	}{
		{name: "narrowed, as granted", access: narrowed, edit: func(r []rbacv1.PolicyRule) []rbacv1.PolicyRule { return r }, want: true},
		{name: "narrowed, SubjectAccessReviews removed", access: narrowed, edit: without(reviews)},
		{name: "narrowed, Namespaces removed", access: narrowed, edit: without(namespaces)},
		{name: "narrowed, delete taken from one protected type's group", access: narrowed, edit: withoutDelete(core)},
		{name: "wildcard, as granted", access: wildcard, edit: func(r []rbacv1.PolicyRule) []rbacv1.PolicyRule { return r }, want: true},
		{name: "wildcard, SubjectAccessReviews removed", access: wildcard, edit: without(reviews)},
		{
			// The wildcard grant names its protected types only in its
			// delete rules: with one of them gone, deferred deletion
			// still stands for the other, and protected_resources
			// shows the type missing.
			name: "wildcard, delete taken from one protected type's group", access: wildcard, edit: withoutDelete(core),
			want: true, protectedLeft: 1,
		},
		{
			// As an older grant had it: delete on everything, which
			// apply takes away.
			name: "wildcard, delete added to everything", access: wildcard,
			edit: func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
				for i, r := range rules {
					if everything(r) {
						rules[i].Verbs = append(slices.Clone(r.Verbs), "delete")
					}
				}
				return rules
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, isNarrowed := shardAccessFrom(tt.edit(rbac.ShardReader(subjects, tt.access).Role.Rules))
			if got.DeferredDeletion != tt.want {
				t.Errorf("deferred deletion = %v, want %v", got.DeferredDeletion, tt.want)
			}
			protected := len(tt.access.Protected)
			if tt.protectedLeft > 0 {
				protected = tt.protectedLeft
			}
			if isNarrowed != (len(tt.access.Dependents) > 0) || len(got.Dependents) != len(tt.access.Dependents) || len(got.Protected) != protected {
				t.Errorf("read back %+v (narrowed %v) from %+v", got, isNarrowed, tt.access)
			}
		})
	}
}

// TestAccShardResource_context: a shard admin kubeconfig with several
// contexts, whose current one is not the shard's: without `context` the
// apply fails, with it the grant is written, and an import ID naming the
// context reads the same state back.
func TestAccShardResource_context(t *testing.T) {
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
		return providerConfig(e) + shardHCL("this", shard.Name, kubeconfig, user, grant, extra)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             grantRemoved(ctx, t, e, grant, shard),
		Steps: slices.Concat([]resource.TestStep{
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
			importVerified("depctrl_shard.this", shard.Name+"/"+grant+","+kubeconfig+",context=system-masters"),
			importPlansNothing("depctrl_shard.this", shard.Name+"/"+grant+","+kubeconfig+",context=system-masters"),
		}, identitySteps(t,
			importByIdentityBlockPlansNothing("depctrl_shard.this", config(`  context = "system-masters"`+"\n"), map[string]string{
				"name": shard.Name, "grant_name": grant, "kubeconfig_path": kubeconfig, "context": "system-masters",
			}),
		)),
	})
}

// providerWithShardCredentials is providerConfig with the given entries of
// shard_credentials.
func providerWithShardCredentials(e *env.Env, entries string) string {
	return fmt.Sprintf("provider \"depctrl\" {\n  kubeconfig_path = %q\n  shard_credentials = {\n%s\n  }\n}\n", e.AdminKubeconfig, entries)
}

// TestAccShardResource_providerCredentials: depctrl_shard resources that
// set no credentials use the provider block's shard_credentials, one with an
// inline client certificate and key, one with an inline kubeconfig and a
// context. No key reaches the state, and both import, by ID and by
// identity, with nothing but the shard and grant names.
func TestAccShardResource_providerCredentials(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	ctx := context.Background()
	tfDir := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", tfDir)
	s0, s1 := e.Shards[0], e.Shards[1]
	grant := env.UniqueName("depctrl-test") + ":reader"
	user := env.UniqueName("webhook")
	dir := t.TempDir()

	// Shard 0: the client certificate, key and CA of its admin kubeconfig.
	cfg, err := e.ShardAdminConfig(s0.Name, systemAdminCluster)
	check.Must(t, err)
	check.Must(t, rest.LoadTLSFiles(cfg))
	for name, data := range map[string][]byte{"admin.crt": cfg.CertData, "admin.key": cfg.KeyData, "ca.crt": cfg.CAData} {
		check.Must(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	// Shard 1: its admin kubeconfig with everything inline, and a current
	// context that points nowhere.
	kc, err := clientcmd.LoadFromFile(s1.AdminKubeconfig)
	check.Must(t, err)
	check.Must(t, clientcmdapi.FlattenConfig(kc))
	admin := kc.Contexts[kc.CurrentContext]
	kc.Contexts = map[string]*clientcmdapi.Context{"system-masters": admin, "elsewhere": {Cluster: "nowhere", AuthInfo: admin.AuthInfo}}
	kc.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.CurrentContext = "elsewhere"
	check.Must(t, clientcmd.WriteToFile(*kc, filepath.Join(dir, "shard1.kubeconfig")))

	config := providerWithShardCredentials(e, fmt.Sprintf(`    %q = {
      client_certificate     = file(%q)
      client_key             = file(%q)
      cluster_ca_certificate = file(%q)
    }
    %q = {
      kubeconfig_raw = file(%q)
      context        = "system-masters"
    }`, s0.Name, filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key"), filepath.Join(dir, "ca.crt"),
		s1.Name, filepath.Join(dir, "shard1.kubeconfig"))) + fmt.Sprintf(`
resource "depctrl_shard" "s0" {
  name           = %q
  url            = %q
  webhook_groups = [%q]
  grant_name     = %q
}

resource "depctrl_shard" "s1" {
  name           = %q
  webhook_groups = [%q]
  grant_name     = %q
}
`, s0.Name, s0.URL, user, grant, s1.Name, user, grant)
	granted := func(*terraform.State) error {
		for _, s := range []env.Shard{s0, s1} {
			if _, err := shardAdmin(t, e, s.Name).Resource(clusterRolesGVR).Get(ctx, grant, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("the grant on shard %s: %w", s.Name, err)
			}
		}
		return nil
	}
	var noCredentials []statecheck.StateCheck
	for _, addr := range []string{"depctrl_shard.s0", "depctrl_shard.s1"} {
		for _, attr := range []string{"kubeconfig_path", "client_certificate_path", "client_certificate", "client_key", "context"} {
			noCredentials = append(noCredentials, statecheck.ExpectKnownValue(addr, tfjsonpath.New(attr), knownvalue.Null()))
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             grantRemoved(ctx, t, e, grant, s0, s1),
		Steps: slices.Concat([]resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: append(noCredentials,
					statecheck.ExpectKnownValue("depctrl_shard.s1", tfjsonpath.New("url"), knownvalue.StringExact(s1.URL))),
				Check: resource.ComposeTestCheckFunc(granted, noSecretsInState(tfDir)),
			},
			importVerified("depctrl_shard.s0", s0.Name+"/"+grant+",url="+s0.URL),
			importVerified("depctrl_shard.s1", s1.Name+"/"+grant),
			importPlansNothing("depctrl_shard.s1", s1.Name+"/"+grant),
		}, identitySteps(t,
			importByIdentityBlockPlansNothing("depctrl_shard.s0", config, map[string]string{"name": s0.Name, "grant_name": grant, "url": s0.URL}),
		)),
	})
}

// TestShardStateFromLists: read_resources and protected_resources were
// lists before they became sets; a state written then still reads.
func TestShardStateFromLists(t *testing.T) {
	server, err := testAccProtoV6ProviderFactories["depctrl"]()
	check.Must(t, err)
	raw := `{"id":"root","name":"root","kubeconfig_path":"k","webhook_users":["w"],"grant_name":"g",` +
		`"read_resources":["virtualmachines.compute.example.io","configmaps"],"protected_resources":["vpcs.network.example.io"],` +
		`"reindex":true,"url":"https://x:6443","base_url":"https://x:6443","rules":["urls=/ verbs=access"]}`
	resp, err := server.UpgradeResourceState(context.Background(), &tfprotov6.UpgradeResourceStateRequest{
		TypeName: "depctrl_shard",
		RawState: &tfprotov6.RawState{JSON: []byte(raw)},
	})
	check.Must(t, err)
	for _, d := range resp.Diagnostics {
		t.Errorf("%s: %s", d.Summary, d.Detail)
	}
	if resp.UpgradedState == nil {
		t.Fatal("no state")
	}
	typ := shardSchemaType(t)
	v, err := resp.UpgradedState.Unmarshal(typ)
	check.Must(t, err)
	var attrs map[string]tftypes.Value
	check.Must(t, v.As(&attrs))
	var read []tftypes.Value
	check.Must(t, attrs["read_resources"].As(&read))
	if !attrs["read_resources"].Type().Is(tftypes.Set{}) || len(read) != 2 {
		t.Errorf("read_resources = %v", attrs["read_resources"])
	}
}

func shardSchemaType(t *testing.T) tftypes.Type {
	t.Helper()
	var resp fwresource.SchemaResponse
	NewShardResource().Schema(context.Background(), fwresource.SchemaRequest{}, &resp)
	return resp.Schema.Type().TerraformType(context.Background())
}

// TestAccShardResource_certificates: a shard reached with a client
// certificate and key from files and an inline CA, imported with the
// certificate form of the import ID (its CA read from a file), or of an
// import block's identity, plans nothing.
func TestAccShardResource_certificates(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	ctx := context.Background()
	shard := e.Shards[0]
	grant := env.UniqueName("depctrl-test") + ":reader"
	user := env.UniqueName("webhook")

	cfg, err := e.ShardAdminConfig(shard.Name, systemAdminCluster)
	check.Must(t, err)
	check.Must(t, rest.LoadTLSFiles(cfg))
	dir := t.TempDir()
	files := map[string][]byte{"admin.crt": cfg.CertData, "admin.key": cfg.KeyData, "ca.crt": cfg.CAData}
	for name, data := range files {
		if len(data) == 0 {
			t.Fatalf("the shard's admin kubeconfig has no %s", name)
		}
		check.Must(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	config := providerConfig(e) + fmt.Sprintf(`
resource "depctrl_shard" "this" {
  name                    = %q
  url                     = %q
  client_certificate_path = %q
  client_key_path         = %q
  ca_certificate          = file(%q)
  webhook_groups          = [%q]
  grant_name              = %q
  read_resources          = ["configmaps"]
  protected_resources     = ["services"]
}
`, shard.Name, shard.URL, filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key"), filepath.Join(dir, "ca.crt"), user, grant)
	id := fmt.Sprintf("%s/%s,%s,%s,ca=%s,url=%s", shard.Name, grant, filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key"), filepath.Join(dir, "ca.crt"), shard.URL)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             grantRemoved(ctx, t, e, grant, shard),
		Steps: slices.Concat([]resource.TestStep{
			{Config: config},
			importVerified("depctrl_shard.this", id),
			importPlansNothing("depctrl_shard.this", id),
		}, identitySteps(t,
			importByIdentityBlockPlansNothing("depctrl_shard.this", config, map[string]string{
				"name": shard.Name, "grant_name": grant, "client_certificate_path": filepath.Join(dir, "admin.crt"),
				"client_key_path": filepath.Join(dir, "admin.key"), "ca_certificate_path": filepath.Join(dir, "ca.crt"), "url": shard.URL,
			}),
		)),
	})
}
