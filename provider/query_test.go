package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestAccQuery_basic: `terraform query` lists an installation made partly by
// hand: the workspaces of a tree, the DependencyRules in it (one applied
// by Terraform, one by hand, with their Ready state), and the shards, each
// result with the identity its resource imports by. Terraform 1.14 and
// later only (OpenTofu has no query).
func TestAccQuery_basic(t *testing.T) {
	e := queryEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	depctrl, compute, network := servedTopology(ctx, t, e)
	org := compute[:len(compute)-len(":compute")]
	applyHandMadeRule(ctx, t, e, compute, network, "hand-made", false)

	rule := providerConfig(e) + vmRule{Workspace: fmt.Sprintf("%q", compute), NetworkPath: fmt.Sprintf("%q", network),
		Extra: "\n  wait_for_enforcement = false\n"}.HCL("by_terraform", "by-terraform")
	// The query runs next to the configuration of the step before, whose
	// provider block it uses.
	query := fmt.Sprintf(`
list "depctrl_workspace" "org" {
  provider = depctrl
  config {
    parent_path = %q
    recursive   = true
  }
}

list "depctrl_dependency_rule" "org" {
  provider         = depctrl
  include_resource = true
  config {
    workspace_path = %q
    recursive      = true
  }
}

list "depctrl_shard" "all" {
  provider         = depctrl
  include_resource = true
}
`, org, org)
	handMade := map[string]knownvalue.Check{"workspace_path": knownvalue.StringExact(compute), "name": knownvalue.StringExact("hand-made")}
	null := knownvalue.Null()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: rule},
			{
				Query:  true,
				Config: query,
				QueryResultChecks: []querycheck.QueryResultCheck{
					querycheck.ExpectLength("depctrl_workspace.org", 3),
					querycheck.ExpectIdentity("depctrl_workspace.org", map[string]knownvalue.Check{"path": knownvalue.StringExact(depctrl)}),
					querycheck.ExpectIdentity("depctrl_workspace.org", map[string]knownvalue.Check{"path": knownvalue.StringExact(compute)}),
					querycheck.ExpectLength("depctrl_dependency_rule.org", 2),
					querycheck.ExpectIdentity("depctrl_dependency_rule.org", handMade),
					querycheck.ExpectIdentity("depctrl_dependency_rule.org", map[string]knownvalue.Check{
						"workspace_path": knownvalue.StringExact(compute), "name": knownvalue.StringExact("by-terraform")}),
					querycheck.ExpectResourceDisplayName("depctrl_dependency_rule.org", queryfilter.ByResourceIdentity(handMade), knownvalue.StringExact(compute+"/hand-made")),
					querycheck.ExpectResourceKnownValues("depctrl_dependency_rule.org", queryfilter.ByResourceIdentity(handMade), []querycheck.KnownValueCheck{
						{Path: tfjsonpath.New("dependent").AtMapKey("kind"), KnownValue: knownvalue.StringExact("VirtualMachine")},
						{Path: tfjsonpath.New("dependency").AtSliceIndex(0).AtMapKey("field_ref").AtMapKey("path"), KnownValue: knownvalue.StringExact(".spec.vpcRef.name")},
						// Made without deferDeletion: false.
						{Path: tfjsonpath.New("defer_deletion"), KnownValue: knownvalue.Bool(false)},
						// No runtime runs here: not enforced.
						{Path: tfjsonpath.New("ready"), KnownValue: knownvalue.Bool(false)},
					}),
					querycheck.ExpectLength("depctrl_shard.all", len(e.Shards)),
					querycheck.ExpectIdentity("depctrl_shard.all", map[string]knownvalue.Check{
						"name": knownvalue.StringExact(e.Shards[0].Name), "grant_name": knownvalue.StringExact(rbac.ShardReaderName),
						"kubeconfig_path": null, "context": null, "client_certificate_path": null, "client_key_path": null, "ca_certificate_path": null, "url": null,
					}),
				},
			},
		},
	})
}

// TestAccQuery_generateConfig: what a team does to bring rules made by hand
// under Terraform, with the real CLI: terraform query
// -generate-config-out writes import blocks and configuration for them,
// and the plan of that configuration imports them and changes nothing.
// One of them defers deletions, which the configuration carries over.
func TestAccQuery_generateConfig(t *testing.T) {
	e := queryEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, compute, network := servedTopology(ctx, t, e)
	applyHandMadeRule(ctx, t, e, compute, network, "hand-made-1", false)
	applyHandMadeRule(ctx, t, e, compute, network, "hand-made-2", true)
	_, rc := devOverride(t)
	dir := t.TempDir()
	check.Must(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  required_providers {
    depctrl = { source = "depctrl/depctrl" }
  }
}
`+providerConfig(e)), 0o600))
	check.Must(t, os.WriteFile(filepath.Join(dir, "rules.tfquery.hcl"), []byte(fmt.Sprintf(`list "depctrl_dependency_rule" "compute" {
  provider         = depctrl
  include_resource = true
  config {
    workspace_path = %q
  }
}
`, compute)), 0o600))
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, cliUnderTest().Path, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("query", "-no-color", "-generate-config-out=generated.tf")
	generated, err := os.ReadFile(filepath.Join(dir, "generated.tf"))
	check.Must(t, err)
	for _, want := range []string{`import\s*\{`, `name\s*=\s*"hand-made-1"`, `name\s*=\s*"hand-made-2"`, `workspace_path\s*=\s*"` + regexp.QuoteMeta(compute) + `"`, `defer_deletion\s*=\s*true`} {
		if !regexp.MustCompile(want).Match(generated) {
			t.Errorf("generated.tf lacks %s:\n%s", want, generated)
		}
	}
	if plan := run("plan", "-no-color", "-input=false"); !strings.Contains(plan, "Plan: 2 to import, 0 to add, 0 to change, 0 to destroy.") {
		t.Errorf("the plan of the generated configuration is not two imports and nothing else:\n%s\ngenerated.tf:\n%s", plan, generated)
	}
}

// queryEnv is the environment of a test of terraform query, two shards;
// the test is skipped where the CLI under test has no query.
func queryEnv(t *testing.T) *env.Env {
	t.Helper()
	if reason := cliUnderTest().queryUnsupported(); reason != "" {
		t.Skip(reason)
	}
	return accEnv(t, env.TwoShards)
}

// applyHandMadeRule applies, without Terraform, the VM-needs-VPC rule
// called name in the workspace compute, protecting the VPCs of network,
// with spec.deferDeletion when deferDeletion (without it otherwise).
func applyHandMadeRule(ctx context.Context, t *testing.T, e *env.Env, compute, network, name string, deferDeletion bool) {
	t.Helper()
	deferring := ""
	if deferDeletion {
		deferring = "  deferDeletion: true\n"
	}
	check.Must(t, fixtures.ApplyYAML(ctx, adminConfig(t, e, compute), fmt.Sprintf(`apiVersion: dependencies.opendefense.cloud/v1alpha1
kind: DependencyRule
metadata:
  name: %s
spec:
  dependent: {apiExportName: compute.test.io, group: compute.test.io, version: v1, kind: VirtualMachine, resource: virtualmachines}
  dependencies:
  - apiExportRef: {path: %q, name: network.test.io}
    group: network.test.io
    version: v1
    resource: vpcs
    fieldRef: {path: .spec.vpcRef.name}
%s`, name, network, deferring)))
}
