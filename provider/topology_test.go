package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// topology is the HCL of a complete installation: the dep-ctrl workspace
// and export, two API provider workspaces (one nested) that bind it, a
// consumer on every shard, root RBAC, every shard, and rules.
type topology struct {
	e      *env.Env
	prefix string
	// extra HCL for the provider block, such as a kubernetes block.
	providerExtra string
	// bindingsAfter makes the bindings depend on these resources, so that
	// they are created after and destroyed before them.
	bindingsAfter string
}

func (tp topology) path(name string) string {
	switch name {
	case "network":
		return "root:" + tp.prefix + "-org:network"
	default:
		return "root:" + tp.prefix + "-" + name
	}
}

func (tp topology) base() string {
	var b strings.Builder
	b.WriteString(strings.Replace(providerConfig(tp.e), "}\n", tp.providerExtra+"}\n", 1))
	dependsOn := ""
	if tp.bindingsAfter != "" {
		dependsOn = "\n  depends_on     = [" + tp.bindingsAfter + "]"
	}
	fmt.Fprintf(&b, `
locals {
  prefix = %[1]q
}

resource "depctrl_workspace" "dep_ctrl" {
  name        = "${local.prefix}-depctrl"
  parent_path = "root"
}

resource "depctrl_workspace" "org" {
  name        = "${local.prefix}-org"
  parent_path = "root"
}

resource "depctrl_workspace" "network" {
  name        = "network"
  parent_path = depctrl_workspace.org.path
}

resource "depctrl_workspace" "compute" {
  name        = "${local.prefix}-compute"
  parent_path = "root"
}

resource "depctrl_export" "this" {
  workspace_path = depctrl_workspace.dep_ctrl.path
  runtime_users  = [%[2]q, %[3]q]
}

resource "depctrl_provider_binding" "network" {
  workspace_path = depctrl_workspace.network.path
  export_path    = depctrl_export.this.workspace_path
  export_name    = depctrl_export.this.name%[5]s
}

resource "depctrl_provider_binding" "compute" {
  workspace_path = depctrl_workspace.compute.path
  export_path    = depctrl_export.this.workspace_path
  export_name    = depctrl_export.this.name%[5]s
}

resource "depctrl_root_rbac" "this" {
  name             = "${local.prefix}:workspace-reader"
  controller_users = [%[4]q]
  parent_paths     = [depctrl_workspace.org.path]
}

# Where the runtime reaches the export on each shard: built from what
# does not change as workspaces bind the export, so that it is known at
# plan and stays put after apply.
data "depctrl_shards" "all" {}

output "virtual_workspace_urls" {
  value = { for s in data.depctrl_shards.all.shards :
    s.name => "${trimsuffix(s.virtual_workspace_url, "/")}/services/apiexport/${depctrl_workspace.dep_ctrl.cluster}/${depctrl_export.this.name}"
  }
}
`, tp.prefix, env.ControllerUser, env.WebhookUser, env.ControllerUser, dependsOn)
	for i, s := range tp.e.Shards {
		fmt.Fprintf(&b, `
resource "depctrl_workspace" "consumer_%[1]d" {
  name           = "${local.prefix}-consumer-%[1]d"
  parent_path    = "root"
  shard_selector = { name = %[2]q }
}

resource "depctrl_shard" "s%[1]d" {
  name            = %[2]q
  kubeconfig_path = %[3]q
  webhook_users   = [%[4]q]
  grant_name      = "${local.prefix}:reader"
}
`, i, s.Name, s.AdminKubeconfig, env.WebhookUser)
	}
	return b.String()
}

// withRules adds the two rules; vmField is where VMs name their VPC.
func (tp topology) withRules(vmField, extra string) string {
	return tp.base() + vmRule{Workspace: "depctrl_provider_binding.compute.workspace_path", NetworkPath: "depctrl_provider_binding.network.workspace_path",
		Field: vmField}.HCL("vm_needs_vpc", "vm-needs-vpc") +
		managedDBRule("depctrl_provider_binding.network.workspace_path", "firewallrules", ".spec.firewalls[*].name").HCL("db_needs_firewall", "db-needs-firewall") + extra
}

// TestAccTopology_basic applies a complete installation on the two-shard
// topology, runs the real runtime against it, checks that protection works
// on every shard, exercises the rule resource's update, import and drift,
// and destroys everything.
func TestAccTopology_basic(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tp := topology{e: e, prefix: env.UniqueName("acc")}
	consumers := make([]string, len(e.Shards))
	for i := range e.Shards {
		consumers[i] = tp.path(fmt.Sprintf("consumer-%d", i))
	}
	rule := "depctrl_dependency_rule.vm_needs_vpc"
	// VPCs that name a gateway VM: with vm_needs_vpc, a cycle.
	cycleRule := ruleHCL{
		Workspace: "depctrl_provider_binding.network.workspace_path", ExportPath: "depctrl_provider_binding.compute.workspace_path",
		Group: "network.test.io", Kind: "VPC", Resource: "vpcs",
		DependencyGroup: "compute.test.io", DependencyResource: "virtualmachines", Field: ".spec.gatewayVM",
	}.HCL("cycle", "vpc-needs-vm")
	compute := adminDynamic(t, e, tp.path("compute"))
	// A tenant's workspace that Terraform did not create, as consumers
	// usually are: what the runtime wrote there outlives the destroy.
	tenant := tp.path("tenant")
	tenants := append(slices.Clone(consumers), tenant)

	// fixtures installs what the API providers and consumers do themselves:
	// the network and compute APIs, and consumers binding them.
	fixturesAndRuntime := func() {
		_, err := e.CreateWorkspace(ctx, "root", tp.prefix+"-tenant", env.OnShard(e.Shards[len(e.Shards)-1].Name))
		check.Must(t, err)
		t.Cleanup(func() { _ = e.DeleteWorkspace(context.Background(), tenant) })
		tp.applyFixtures(ctx, t, tenants)
		runtimetest.Start(ctx, t, e, tp.path("depctrl"))
	}
	protected := func(*terraform.State) error {
		for _, c := range tenants {
			if err := tp.expectProtected(ctx, t, c, "vm-1"); err != nil {
				return err
			}
		}
		return nil
	}
	// The output of virtual workspace URLs, one per shard, names every one
	// the export's endpoint slice lists, now that workspaces on the shards
	// bind it.
	endpointsInOutput := func(s *terraform.State) error {
		out, ok := s.RootModule().Outputs["virtual_workspace_urls"]
		if !ok {
			return fmt.Errorf("no output virtual_workspace_urls")
		}
		want := map[string]bool{}
		for _, u := range out.Value.(map[string]interface{}) {
			want[u.(string)] = true
		}
		slice, err := adminDynamic(t, e, tp.path("depctrl")).Resource(endpointSlicesGVR).Get(ctx, v1alpha1.DefaultAPIExportName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		endpoints, _, _ := unstructured.NestedSlice(slice.Object, "status", "endpoints")
		if len(endpoints) == 0 {
			return fmt.Errorf("the export's endpoint slice lists no virtual workspace")
		}
		for _, ep := range endpoints {
			if u, _ := ep.(map[string]interface{})["url"].(string); !want[u] {
				return fmt.Errorf("the endpoint slice lists %s, which the output %v does not", u, out.Value)
			}
		}
		return nil
	}
	// Every destroy, of a rule during the test and of everything at its
	// end, runs with the runtime running: none may warn that the
	// controller left anything behind.
	resource.Test(t, withRuntimeRunning(resource.TestCase{
		CheckDestroy: func(*terraform.State) error {
			// Nothing of the installation is left in any workspace of root
			// or on any shard; the workspaces the test made itself (not
			// Terraform) are the tenant's and the refused binding's.
			left, err := installationLeftovers(ctx, t, e, tp.prefix, tenant, tp.path("refused"))
			if err != nil {
				return err
			}
			if len(left) > 0 {
				return fmt.Errorf("left behind by destroy:\n  %s", strings.Join(left, "\n  "))
			}
			// In the tenant's workspace, what the runtime wrote stays, and
			// is what the topology guide says stays.
			left, err = tracesIn(ctx, adminDynamic(t, e, tenant))
			if err != nil {
				return err
			}
			t.Logf("left behind in %s, Terraform not having created it:\n  %s", tenant, strings.Join(left, "\n  "))
			if len(left) == 0 {
				return fmt.Errorf("nothing of the runtime's in %s, where a VM references a VPC: the listing does not see it", tenant)
			}
			for _, l := range left {
				if !documentedTrace(l) {
					return fmt.Errorf("%s is left behind in %s, but the topology guide does not say that it stays", l, tenant)
				}
			}
			// The guide's command removes them.
			if err := runGuideCommand(ctx, t, e, "<consumer workspace>", tenant); err != nil {
				return err
			}
			if left, err := tracesIn(ctx, adminDynamic(t, e, tenant)); err != nil || len(left) > 0 {
				return fmt.Errorf("after the topology guide's command, still left in %s: %v (err=%v)", tenant, left, err)
			}
			return nil
		},
		Steps: emptyPlanAfterEachApply(slices.Concat([]resource.TestStep{
			{
				// The kcp side of the installation.
				Config: tp.base(),
			},
			{
				// The runtime starts; rules are applied and enforced.
				PreConfig: fixturesAndRuntime,
				Config:    tp.withRules(".spec.vpcRef.name", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(rule, tfjsonpath.New("ready"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue("depctrl_dependency_rule.db_needs_firewall", tfjsonpath.New("ready"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(rule, tfjsonpath.New("id"), knownvalue.StringExact(tp.path("compute")+"/vm-needs-vpc")),
				},
				Check: resource.ComposeTestCheckFunc(protected, endpointsInOutput),
			},
			importVerified(rule, tp.path("compute")+"/vm-needs-vpc"),
			withConfig(importPlansNothing(rule, tp.path("compute")+"/vm-needs-vpc"), tp.withRules(".spec.vpcRef.name", "")),
		}, identitySteps(t,
			// The identity names the rule by its workspace and name, and an
			// import block may give it instead of the ID.
			expectIdentity(tp.withRules(".spec.vpcRef.name", ""), rule, map[string]knownvalue.Check{
				"workspace_path": knownvalue.StringExact(tp.path("compute")),
				"name":           knownvalue.StringExact("vm-needs-vpc"),
			}),
			withConfig(importByIdentityPlansNothing(rule), tp.withRules(".spec.vpcRef.name", "")),
		), []resource.TestStep{
			{
				// depctrl_references names, in every tenant, the VM that
				// references vpc-1 (the protected check made both), and
				// nothing for the VM, which nothing references.
				Config:            tp.withRules(".spec.vpcRef.name", "") + referencesHCL(tenants),
				ConfigStateChecks: referencesChecks(tenants),
			},
			{
				// Drift: the field path is changed by hand; apply restores it.
				PreConfig: func() { setRuleFieldPath(ctx, t, compute, "vm-needs-vpc", ".spec.somewhereElse") },
				Config:    tp.withRules(".spec.vpcRef.name", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(rule, plancheck.ResourceActionUpdate),
				}},
				Check: protected,
			},
			{
				// A changed field path updates the rule in place.
				Config: tp.withRules(".spec.networks[*].vpc", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(rule, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(rule, tfjsonpath.New("ready"), knownvalue.Bool(true)),
				},
			},
			{
				// A rule that closes a cycle with one in kcp fails at plan,
				// on the dependency that closes it, naming both rules.
				Config:   tp.withRules(".spec.networks[*].vpc", cycleRule),
				PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)DependencyRule closes a dependency cycle.*` + wrapped(fmt.Sprintf(
					"dependency[0]: with it, rule %s/vpc-needs-vm closes a dependency cycle with rule %s/vm-needs-vpc: "+
						"vpcs.network.test.io -> virtualmachines.compute.test.io (rule %[1]s/vpc-needs-vm) -> vpcs.network.test.io (rule %[2]s/vm-needs-vpc)",
					tp.path("network"), tp.path("compute"))) + `.*CycleDetected`),
			},
			{
				// So does the apply of it, before it writes anything.
				Config:      tp.withRules(".spec.networks[*].vpc", cycleRule),
				ExpectError: regexp.MustCompile(`(?s)DependencyRule closes a dependency cycle.*` + wrapped("rule "+tp.path("network")+"/vpc-needs-vm closes a dependency cycle with rule "+tp.path("compute")+"/vm-needs-vpc")),
			},
			{
				PreConfig: func() {
					if _, err := adminDynamic(t, e, tp.path("network")).Resource(v1alpha1.GroupVersionResource).Get(ctx, "vpc-needs-vm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
						t.Fatalf("the rule that closes a cycle was written (err=%v)", err)
					}
				},
				// A dependency in a workspace that does not exist.
				Config:      tp.withRules(".spec.networks[*].vpc", failingDBRule("dangling", "${depctrl_workspace.org.path}:nowhere", "regions", ".spec.region")),
				ExpectError: regexp.MustCompile(`DependencyRule not enforced[\s\S]*WorkspaceNotFound`),
			},
			{
				// Back to the two rules: the failed ones are removed.
				Config: tp.withRules(".spec.networks[*].vpc", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("depctrl_dependency_rule.dangling", plancheck.ResourceActionDestroy),
				}},
			},
			{
				// A workspace that bound the dep-ctrl export without accepting
				// its claim has not consented: the rule says so.
				PreConfig: func() {
					ws, err := e.CreateWorkspace(ctx, "root", tp.prefix+"-refused")
					check.Must(t, err)
					t.Cleanup(func() { _ = e.DeleteWorkspace(context.Background(), ws.Path) })
					check.Must(t, fixtures.ApplyYAML(ctx, adminConfig(t, e, ws.Path), fixtures.ExportYAML(fixtures.VPCs)+"---\n"+
						fixtures.BindingYAML("dep-ctrl", tp.path("depctrl"), v1alpha1.DefaultAPIExportName)))
				},
				Config:      tp.withRules(".spec.networks[*].vpc", failingDBRule("refused", "root:${local.prefix}-refused", "vpcs", ".spec.vpc")),
				ExpectError: regexp.MustCompile(`DependencyRule not enforced[\s\S]*ClaimNotAccepted`),
			},
			{
				Config: tp.withRules(".spec.networks[*].vpc", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("depctrl_dependency_rule.refused", plancheck.ResourceActionDestroy),
				}},
			},
			{
				// Repair: the controller's grant in the network export's
				// parent workspace is removed by hand, and the controller
				// reports the rules unresolvable. The plan restores the
				// grant and updates the rules to wait for them; apply
				// returns with both enforced again.
				PreConfig: func() { removeParentGrant(ctx, t, e, tp, compute, "vm-needs-vpc", "db-needs-firewall") },
				Config:    tp.withRules(".spec.networks[*].vpc", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("depctrl_root_rbac.this", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction(rule, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(rule, tfjsonpath.New("ready"), knownvalue.Bool(true)),
					plancheck.ExpectResourceAction("depctrl_dependency_rule.db_needs_firewall", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(rule, tfjsonpath.New("ready"), knownvalue.Bool(true)),
				},
				// As apply returns, kcp says both rules are enforced, and
				// a VM referencing a VPC where the rule now looks holds it.
				Check: func(*terraform.State) error {
					for _, name := range []string{"vm-needs-vpc", "db-needs-firewall"} {
						if err := ruleEnforcedInKCP(ctx, compute, name); err != nil {
							return err
						}
					}
					for _, c := range tenants {
						if err := tp.expectProtectedBy(ctx, t, c, "vm-repaired", map[string]interface{}{
							"networks": []interface{}{map[string]interface{}{"vpc": "vpc-1"}}}); err != nil {
							return err
						}
					}
					return nil
				},
			},
		})),
	}))
}

// removeParentGrant deletes, outside Terraform, the controller's grant to
// read workspaces in the network export's parent workspace, and waits
// until the controller reports each of the rules (in compute) not
// enforced.
func removeParentGrant(ctx context.Context, t *testing.T, e *env.Env, tp topology, compute dynamic.Interface, rules ...string) {
	t.Helper()
	check.Must(t, adminDynamic(t, e, tp.path("org")).Resource(clusterRoleBindingsGVR).Delete(ctx, tp.prefix+":workspace-reader", metav1.DeleteOptions{}))
	// The controller reads a resolved path again after its cache TTL and
	// runs at least every resync period.
	for _, rule := range rules {
		check.Eventually(ctx, t, 2*time.Minute, "the controller to report "+rule+" not enforced", func() error {
			if ruleEnforcedInKCP(ctx, compute, rule) == nil {
				return fmt.Errorf("still enforced")
			}
			return nil
		})
	}
}

// installationLeftovers lists what an installation named by prefix left
// in kcp: workspaces in root, and ClusterRoles and ClusterRoleBindings in
// root and in every shard's system:admin, other than the workspaces in
// except (made by the test, not by Terraform).
func installationLeftovers(ctx context.Context, t *testing.T, e *env.Env, prefix string, except ...string) ([]string, error) {
	t.Helper()
	var left []string
	workspaces, err := adminKCP(t, e).Cluster(logicalcluster.NewPath("root")).TenancyV1alpha1().Workspaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the workspaces of root: %w", err)
	}
	for _, ws := range workspaces.Items {
		if p := "root:" + ws.Name; strings.HasPrefix(ws.Name, prefix) && !slices.Contains(except, p) {
			left = append(left, "workspace "+p)
		}
	}
	rbacIn := map[string]dynamic.Interface{"root": adminDynamic(t, e, "root")}
	for _, s := range e.Shards {
		rbacIn["system:admin of shard "+s.Name] = shardAdmin(t, e, s.Name)
	}
	for where, d := range rbacIn {
		for _, gvr := range []schema.GroupVersionResource{clusterRolesGVR, clusterRoleBindingsGVR} {
			list, err := d.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("listing %s in %s: %w", gvr.Resource, where, err)
			}
			for _, o := range list.Items {
				if strings.Contains(o.GetName(), prefix) {
					left = append(left, fmt.Sprintf("%s %s in %s", gvr.Resource, o.GetName(), where))
				}
			}
		}
	}
	sort.Strings(left)
	return left, nil
}

// emptyPlanAfterEachApply adds to every step that applies a configuration
// the check that a plan right after it, refreshed, is empty: what apply
// leaves in state is what kcp then says, outputs included.
func emptyPlanAfterEachApply(steps []resource.TestStep) []resource.TestStep {
	for i, s := range steps {
		if s.Config == "" || s.ImportState || s.PlanOnly || s.ExpectError != nil {
			continue
		}
		steps[i].ConfigPlanChecks.PostApplyPostRefresh = append(s.ConfigPlanChecks.PostApplyPostRefresh, plancheck.ExpectEmptyPlan())
	}
	return steps
}

// documentedTraces are the labels and annotations the runtime writes on
// objects in consumer workspaces, as the topology guide lists them under
// what a destroy leaves behind ("label <key>" or "annotation <key>"; a key
// ending in / stands for every key it starts).
var documentedTraces = []string{
	"label ref.dependencies.opendefense.cloud/",
	"label dependencies.opendefense.cloud/indexed",
	"label dependencies.opendefense.cloud/intent",
	"label dependencies.opendefense.cloud/settled",
	"annotation intent.dependencies.opendefense.cloud/",
	"annotation dependencies.opendefense.cloud/intent-targets",
}

func documentedTrace(trace string) bool {
	_, key, _ := strings.Cut(trace, ": ")
	for _, d := range documentedTraces {
		if key == d || (strings.HasSuffix(d, "/") && strings.HasPrefix(key, d)) {
			return true
		}
	}
	return false
}

// runGuideCommand runs the command of the topology guide's section on what
// a destroy leaves behind that is written for the workspace placeholder,
// against the workspace at path, as kcp-admin. Without kubectl and jq it
// says so and runs nothing.
func runGuideCommand(ctx context.Context, t *testing.T, e *env.Env, placeholder, path string) error {
	t.Helper()
	for _, tool := range []string{"kubectl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Logf("not running the topology guide's command to remove what stays: no %s on PATH", tool)
			return nil
		}
	}
	guide, err := os.ReadFile("../templates/guides/topology.md.tmpl")
	if err != nil {
		return err
	}
	var command string
	for _, block := range strings.Split(string(guide), "```sh\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.Contains(block, "/clusters/"+placeholder) {
			command = block
		}
	}
	if command == "" {
		return fmt.Errorf("the topology guide has no command for %s", placeholder)
	}
	command = strings.NewReplacer("https://<front-proxy>", e.FrontProxyURL, placeholder, path).Replace(command)
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", command)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.AdminKubeconfig)
	out, err := cmd.CombinedOutput()
	t.Logf("%s\n%s", command, out)
	if err != nil {
		return fmt.Errorf("the topology guide's command failed: %v\n%s", err, out)
	}
	return nil
}

// projectKey matches the keys of labels and annotations of the project's
// own domain, and its subdomains.
var projectKey = regexp.MustCompile(`^([a-z0-9-]+\.)?` + regexp.QuoteMeta(v1alpha1.Group) + `/`)

// tracesIn lists, for every VPC and VirtualMachine in a consumer workspace,
// each label and annotation of the project's, as
// "<kind>/<namespace>/<name>: label|annotation <key>".
func tracesIn(ctx context.Context, d dynamic.Interface) ([]string, error) {
	var out []string
	for _, a := range []fixtures.APIType{fixtures.VPCs, fixtures.VirtualMachines} {
		list, err := d.Resource(a.GVR()).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", a.Resource, err)
		}
		for _, o := range list.Items {
			at := a.Kind + "/" + o.GetNamespace() + "/" + o.GetName() + ": "
			for k := range o.GetLabels() {
				if projectKey.MatchString(k) {
					out = append(out, at+"label "+k)
				}
			}
			for k := range o.GetAnnotations() {
				if projectKey.MatchString(k) {
					out = append(out, at+"annotation "+k)
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// managedDBRule is a rule in the compute workspace whose ManagedDBs
// reference, at fieldPath, a network.test.io resource exported from the
// workspace at exportPath (an HCL expression).
func managedDBRule(exportPath, resource, fieldPath string) ruleHCL {
	return ruleHCL{
		Workspace: "depctrl_provider_binding.compute.workspace_path", ExportPath: exportPath,
		Group: "compute.test.io", Kind: "ManagedDB", Resource: "manageddbs",
		DependencyGroup: "network.test.io", DependencyResource: resource, Field: fieldPath,
	}
}

// failingDBRule is managedDBRule named name, for the steps whose rule must
// fail to be enforced (so it is given 30 s, not the default wait).
func failingDBRule(name, exportPath, resource, fieldPath string) string {
	r := managedDBRule(fmt.Sprintf("%q", exportPath), resource, fieldPath)
	r.Extra = "\n  timeouts {\n    create = \"30s\"\n  }\n"
	return r.HCL(name, name)
}

// applyFixtures does what the API providers and consumers do themselves:
// the network and compute APIs, and consumers binding them.
func (tp topology) applyFixtures(ctx context.Context, t *testing.T, consumers []string) {
	t.Helper()
	check.Must(t, fixtures.ApplyYAML(ctx, adminConfig(t, tp.e, tp.path("network")), fixtures.ExportYAML(fixtures.VPCs, fixtures.FirewallRules)))
	check.Must(t, fixtures.ApplyYAML(ctx, adminConfig(t, tp.e, tp.path("compute")), fixtures.ExportYAML(fixtures.VirtualMachines, fixtures.ManagedDBs)))
	for _, c := range consumers {
		check.Must(t, fixtures.ApplyYAML(ctx, adminConfig(t, tp.e, c),
			fixtures.BindingYAML("network", tp.path("network"), fixtures.VPCs.Group)+"---\n"+
				fixtures.BindingYAML("compute", tp.path("compute"), fixtures.VirtualMachines.Group)+"---\n"+
				"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n"))
	}
}

// expectProtected creates vpc-1 and a VirtualMachine vm that references it
// at .spec.vpcRef.name in consumer, and checks that deleting vpc-1 is
// refused, naming vm.
func (tp topology) expectProtected(ctx context.Context, t *testing.T, consumer, vm string) error {
	t.Helper()
	return tp.expectProtectedBy(ctx, t, consumer, vm, map[string]interface{}{"vpcRef": map[string]interface{}{"name": "vpc-1"}})
}

// expectProtectedBy is expectProtected with the VM's spec given: it must
// reference vpc-1 where the rule looks.
func (tp topology) expectProtectedBy(ctx context.Context, t *testing.T, consumer, vm string, vmSpec map[string]interface{}) error {
	t.Helper()
	d := adminDynamic(t, tp.e, consumer)
	create := func(a fixtures.APIType, name string, spec map[string]interface{}) {
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": a.Group + "/v1", "kind": a.Kind,
			"metadata": map[string]interface{}{"name": name, "namespace": "apps"},
			"spec":     spec,
		}}
		check.Eventually(ctx, t, time.Minute, "creating "+a.Resource+"/"+name+" in "+consumer, func() error {
			_, err := d.Resource(a.GVR()).Namespace("apps").Create(ctx, u, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
	create(fixtures.VPCs, "vpc-1", map[string]interface{}{})
	create(fixtures.VirtualMachines, vm, vmSpec)
	err := d.Resource(fixtures.VPCs.GVR()).Namespace("apps").Delete(ctx, "vpc-1", metav1.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "still referenced by VirtualMachine/"+vm) {
		return fmt.Errorf("deleting a referenced VPC in %s: want a denial naming %s, got %v", consumer, vm, err)
	}
	return nil
}

func adminConfig(t *testing.T, e *env.Env, path string) *rest.Config {
	t.Helper()
	cfg, err := e.AdminConfig(path)
	check.Must(t, err)
	return cfg
}

// referencesHCL reads, with depctrl_references, what references vpc-1
// (data.depctrl_references.vpc_<i>) and vm-1 (vm_<i>) in the namespace apps
// of each workspace.
func referencesHCL(workspaces []string) string {
	var b strings.Builder
	for i, ws := range workspaces {
		for _, o := range []struct{ label, group, resource, name string }{
			{"vpc", fixtures.VPCs.Group, fixtures.VPCs.Resource, "vpc-1"},
			{"vm", fixtures.VirtualMachines.Group, fixtures.VirtualMachines.Resource, "vm-1"},
		} {
			fmt.Fprintf(&b, `
data "depctrl_references" "%s_%d" {
  workspace_path = %q
  group          = %q
  version        = "v1"
  resource       = %q
  namespace      = "apps"
  name           = %q
}
`, o.label, i, ws, o.group, o.resource, o.name)
		}
	}
	return b.String()
}

// referencesChecks expects what referencesHCL reads: vm-1, stored,
// references vpc-1, and nothing references vm-1.
func referencesChecks(workspaces []string) []statecheck.StateCheck {
	var checks []statecheck.StateCheck
	for i, ws := range workspaces {
		vpc, vm := fmt.Sprintf("data.depctrl_references.vpc_%d", i), fmt.Sprintf("data.depctrl_references.vm_%d", i)
		checks = append(checks,
			statecheck.ExpectKnownValue(vpc, tfjsonpath.New("id"), knownvalue.StringExact(ws+"/vpcs.network.test.io/apps/vpc-1")),
			statecheck.ExpectKnownValue(vpc, tfjsonpath.New("referenced"), knownvalue.Bool(true)),
			statecheck.ExpectKnownValue(vpc, tfjsonpath.New("message"), knownvalue.StringRegexp(regexp.MustCompile(`still referenced by VirtualMachine/vm-1`))),
			statecheck.ExpectKnownValue(vpc, tfjsonpath.New("dependents"), knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectPartial(map[string]knownvalue.Check{
				"group": knownvalue.StringExact(fixtures.VirtualMachines.Group), "resource": knownvalue.StringExact(fixtures.VirtualMachines.Resource),
				"kind": knownvalue.StringExact(fixtures.VirtualMachines.Kind), "namespace": knownvalue.StringExact("apps"), "name": knownvalue.StringExact("vm-1"),
				"pending": knownvalue.Bool(false), "workspace": knownvalue.NotNull(),
			})})),
			statecheck.ExpectKnownValue(vpc, tfjsonpath.New("more"), knownvalue.Int64Exact(0)),
			statecheck.ExpectKnownValue(vm, tfjsonpath.New("referenced"), knownvalue.Bool(false)),
			statecheck.ExpectKnownValue(vm, tfjsonpath.New("dependents"), knownvalue.ListSizeExact(0)),
		)
	}
	return checks
}
