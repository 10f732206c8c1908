package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestAccDependencyRuleResource_notServed: a rule that names a version its export
// does not serve fails the plan on dependent.version when the provider can
// read the export; when it cannot (an identity that may write rules and
// nothing else), the apply fails on the same attribute with the
// controller's TypesServed reason and message. Named right, the rule is
// enforced. The kcp side is set up here, not by Terraform, so that the
// second provider needs no access beyond the rules.
func TestAccDependencyRuleResource_notServed(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	compute, network := enforcingTopology(ctx, t, e)

	// rule is the VM rule with the dependent's version.
	rule := func(provider, version string) string {
		return provider + vmRule{Workspace: fmt.Sprintf("%q", compute), NetworkPath: fmt.Sprintf("%q", network), Version: version}.HCL("vm_needs_vpc", "vm-needs-vpc")
	}
	notServed := "dependent.version: export compute.test.io serves virtualmachines in v1, not v1beta1"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      rule(providerConfig(e), "v1beta1"),
			ExpectError: regexp.MustCompile(`(?s)DependencyRule names a type that is not served.*` + wrapped(notServed+" (VersionNotServed)")),
		}},
	})

	writer := ruleWriter(ctx, t, e, compute)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      rule(writer, "v1beta1"),
				ExpectError: regexp.MustCompile(`(?s)DependencyRule not enforced.*` + wrapped("TypesServed VersionNotServed: "+notServed)),
			},
			{
				Config: rule(writer, "v1"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("depctrl_dependency_rule.vm_needs_vpc", tfjsonpath.New("ready"), knownvalue.Bool(true)),
				},
			},
		},
	})
}

// servedTopology sets up, under a fresh org, the dep-ctrl workspace and
// export, and the compute and network providers with their exports (VMs
// and ManagedDBs; VPCs and FirewallRules), each
// binding the dep-ctrl export with every claim accepted (as
// depctrl_provider_binding does), and the controller's path resolution. It
// returns the three workspace paths.
func servedTopology(ctx context.Context, t *testing.T, e *env.Env) (depctrl, compute, network string) {
	t.Helper()
	org := testOrg(t, e)
	paths := map[string]string{}
	for _, name := range []string{"depctrl", "compute", "network"} {
		ws, err := e.CreateWorkspace(ctx, org.Path, name)
		check.Must(t, err)
		paths[name] = ws.Path
	}
	depctrl, compute, network = paths["depctrl"], paths["compute"], paths["network"]
	apply := func(path string, docs ...string) {
		t.Helper()
		for _, d := range docs {
			check.Must(t, fixtures.ApplyYAML(ctx, adminConfig(t, e, path), d))
		}
	}
	controllerOnly := []rbacv1.Subject{rbac.User(env.ControllerUser)}
	apply(depctrl, string(v1alpha1.APIResourceSchemaYAML()), string(v1alpha1.APIExportYAML()),
		grantYAML(t, rbac.ExportAccess(v1alpha1.DefaultAPIExportName, []rbacv1.Subject{rbac.User(env.ControllerUser), rbac.User(env.WebhookUser)})))
	for _, p := range []string{"root", org.Path} {
		apply(p, grantYAML(t, rbac.WorkspaceReader(controllerOnly)))
	}
	binding := func(path string) {
		m := providerBindingModel{workspaceObjectModel: workspaceObjectModel{Name: types.StringValue(defaultBindingName)}, ExportPath: types.StringValue(depctrl), ExportName: types.StringValue(v1alpha1.DefaultAPIExportName)}
		// kcp authorizes a binding through caches that trail a new export
		// by a moment, on another shard more so: retry a refusal for as
		// long as depctrl_provider_binding does (bindPermissionGrace).
		check.Eventually(ctx, t, bindPermissionGrace, "binding the dep-ctrl export in "+path, func() error {
			return applyObjects(ctx, adminDynamic(t, e, path), object{apiBindingsGVR, m.desiredBinding()})
		})
		// The workspace serves DependencyRules a moment after the binding
		// is made: as after depctrl_provider_binding, a rule applied next
		// must find them.
		check.Eventually(ctx, t, time.Minute, "DependencyRules served in "+path, func() error {
			_, err := adminDynamic(t, e, path).Resource(v1alpha1.GroupVersionResource).List(ctx, metav1.ListOptions{})
			return err
		})
	}
	apply(compute, fixtures.ExportYAML(fixtures.VirtualMachines, fixtures.ManagedDBs))
	binding(compute)
	apply(network, fixtures.ExportYAML(fixtures.VPCs, fixtures.FirewallRules))
	binding(network)
	return depctrl, compute, network
}

// ruleWriter returns a provider block for an identity that may write
// DependencyRules in workspace and do nothing else: it cannot read the
// exports a rule names.
func ruleWriter(ctx context.Context, t *testing.T, e *env.Env, workspace string) string {
	t.Helper()
	id := e.MustIdentity(env.UniqueName("rule-writer"))
	check.Must(t, fixtures.ApplyYAML(ctx, adminConfig(t, e, workspace), fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: rule-writer
rules:
- nonResourceURLs: ["/"]
  verbs: ["access"]
- apiGroups: ["dependencies.opendefense.cloud"]
  resources: ["dependencyrules"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: rule-writer
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: rule-writer
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: %s
`, id.User)))
	kubeconfig, err := e.IdentityKubeconfig(id, "root")
	check.Must(t, err)
	p := filepath.Join(t.TempDir(), "rule-writer.kubeconfig")
	check.Must(t, os.WriteFile(p, kubeconfig, 0o600))
	return fmt.Sprintf("provider \"depctrl\" {\n  kubeconfig_path = %q\n}\n", p)
}

// grantYAML renders a ClusterRole and its binding.
func grantYAML(t *testing.T, g rbac.Grant) string {
	t.Helper()
	s, err := fixtures.GrantYAML(g)
	check.Must(t, err)
	return s
}

// wrapped matches text however Terraform wraps its lines.
func wrapped(text string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(text), " ", `\s+`)
}
