package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

// TestAccProvider_badConfigurations: each configuration is wrong in one way, and
// fails at plan (validation or plan, before anything is created) with an
// error that names the attribute at fault. None needs a server: every one
// of them is caught before the provider would talk to kcp or Kubernetes.
func TestAccProvider_badConfigurations(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("runs terraform; only with TF_ACC=1")
	}
	for _, v := range []string{EnvKubeconfig, EnvContext, EnvHost, EnvToken, EnvClientCert, EnvClientKey, EnvClusterCA, EnvInsecure,
		EnvKubeKubeconfig, EnvKubeContext, EnvKubeHost, EnvKubeToken, EnvKubeClientCert, EnvKubeClientKey, EnvKubeClusterCA, EnvKubeInsecure} {
		t.Setenv(v, "")
	}
	dir := t.TempDir()
	kubeconfig := func(name, server string) string {
		p := filepath.Join(dir, name)
		check.Must(t, os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: "+server+
			"\ncontexts:\n- name: k\n  context:\n    cluster: k\n    user: u\ncurrent-context: k\nusers:\n- name: u\n  user:\n    token: x\n"), 0o600))
		return p
	}
	kcp := kubeconfig("kcp", "https://127.0.0.1:1/clusters/root")
	depctrl := kubeconfig("depctrl", "https://127.0.0.1:1/clusters/root:depctrl")
	noWorkspace := kubeconfig("no-workspace", "https://127.0.0.1:1")
	provider := fmt.Sprintf(`provider "depctrl" {
  kubeconfig_path = %q
  kubernetes {
    host  = "https://127.0.0.1:2"
    token = "t"
  }
}
`, kcp)
	runtime := func(body string) string {
		return fmt.Sprintf(`resource "depctrl_runtime" "bad" {
  controller = { kubeconfig_path = %q }
  %s
}
`, depctrl, body)
	}
	webhook := func(extra string) string {
		return fmt.Sprintf(`webhook = { kubeconfig_path = %q %s }`, depctrl, extra)
	}
	object := func(manifest string) string {
		return fmt.Sprintf(`resource "depctrl_object" "bad" {
  workspace_path = "root:team-a"
  manifest       = %s
}
`, manifest)
	}
	rule := func(dependent, dependency string) string {
		if dependent == "" {
			dependent = `api_export_name = "compute.example.io"
    group = "compute.example.io"
    version = "v1"
    kind = "VirtualMachine"
    resource = "virtualmachines"`
		}
		if dependency == "" {
			dependency = `api_export_ref = { path = "root:network", name = "network.example.io" }
    group = "network.example.io"
    version = "v1"
    resource = "vpcs"
    field_ref = { path = ".spec.vpcRef.name" }`
		}
		return fmt.Sprintf(`resource "depctrl_dependency_rule" "bad" {
  workspace_path = "root:compute"
  name           = "vm-needs-vpc"
  dependent {
    %s
  }
  dependency {
    %s
  }
}
`, dependent, dependency)
	}
	okDependency := func(field, value string) string {
		d := map[string]string{
			"api_export_ref": `{ path = "root:network", name = "network.example.io" }`,
			"group":          `"network.example.io"`, "version": `"v1"`, "resource": `"vpcs"`,
			"field_ref": `{ path = ".spec.vpcRef.name" }`,
		}
		d[field] = value
		out := ""
		for _, k := range []string{"api_export_ref", "group", "version", "resource", "field_ref"} {
			out += k + " = " + d[k] + "\n    "
		}
		return out
	}

	cases := []struct {
		name, config, want string
	}{
		// The provider's own connection settings.
		{"kcp: kubeconfig and host", fmt.Sprintf(`provider "depctrl" {
  kubeconfig_path = %q
  host = "https://kcp.example.com"
}
data "depctrl_workspace" "x" { path = "root" }`, kcp), `Conflicting kcp connection settings`},
		{"kcp: plain http host", `provider "depctrl" {
  host = "http://kcp.example.com"
  token = "t"
}
data "depctrl_workspace" "x" { path = "root" }`, `(?s)Invalid kcp host.*must be an https URL`},
		{"kcp: host without credentials", `provider "depctrl" {
  host = "https://kcp.example.com"
}
data "depctrl_workspace" "x" { path = "root" }`, `Missing kcp credentials`},
		{"kcp: certificate without key", `provider "depctrl" {
  host = "https://kcp.example.com"
  client_certificate = "pem"
}
data "depctrl_workspace" "x" { path = "root" }`, `(?s)Incomplete client certificate.*client_key`},
		{"kcp: kubeconfig file missing", `provider "depctrl" {
  kubeconfig_path = "/nonexistent/kcp.kubeconfig"
}
data "depctrl_workspace" "x" { path = "root" }`, `(?s)Cannot read kubeconfig.*nonexistent`},
		{"kubernetes: plain http host", fmt.Sprintf(`provider "depctrl" {
  kubeconfig_path = %q
  kubernetes {
    host  = "http://k8s.example.com"
    token = "t"
  }
}
`, kcp) + runtime(webhook("")), `(?s)Invalid Kubernetes host`},
		{"kubernetes: block missing", fmt.Sprintf(`provider "depctrl" {
  kubeconfig_path = %q
}
`, kcp) + runtime(webhook("")), `(?s)kubernetes block`},

		// Workspaces and the export.
		{"workspace: name", provider + `resource "depctrl_workspace" "x" {
  name        = "Org"
  parent_path = "root"
}`, `(?s)Attribute name .*lowercase`},
		{"workspace: parent path", provider + `resource "depctrl_workspace" "x" {
  name        = "org"
  parent_path = "org"
}`, `(?s)parent_path`},
		{"workspace: type", provider + `resource "depctrl_workspace" "x" {
  name        = "org"
  parent_path = "root"
  type        = "universal"
}`, `(?s)Attribute type`},
		{"export: workspace path", provider + `resource "depctrl_export" "x" {
  workspace_path = "root::depctrl"
  runtime_users  = ["depctrl-controller"]
}`, `(?s)workspace_path`},
		{"export: name", provider + `resource "depctrl_export" "x" {
  workspace_path = "root:depctrl"
  name           = "Not A Name"
  runtime_users  = ["depctrl-controller"]
}`, `(?s)Attribute name`},
		{"export: empty user", provider + `resource "depctrl_export" "x" {
  workspace_path = "root:depctrl"
  runtime_users  = [""]
}`, `(?s)runtime_users`},
		{"binding: export path", provider + `resource "depctrl_provider_binding" "x" {
  workspace_path = "root:network"
  export_path    = "root:Depctrl"
}`, `(?s)export_path`},
		{"references: resource", provider + `data "depctrl_references" "x" {
  workspace_path = "root:team-a"
  group          = "network.example.io"
  version        = "v1"
  resource       = "VPCs"
  namespace      = "default"
  name           = "vpc-1"
}`, `(?s)resource.*plural resource name`},
		{"references: namespace", provider + `data "depctrl_references" "x" {
  workspace_path = "root:team-a"
  group          = "network.example.io"
  version        = "v1"
  resource       = "vpcs"
  namespace      = "team/a"
  name           = "vpc-1"
}`, `(?s)namespace.*namespace name`},
		{"references: no name", provider + `data "depctrl_references" "x" {
  workspace_path = "root:team-a"
  group          = "network.example.io"
  version        = "v1"
  resource       = "vpcs"
}`, `(?s)"name" is required`},
		{"root rbac: nobody to grant", provider + `resource "depctrl_root_rbac" "x" {
}`, `(?s)controller_users.*controller_groups|controller_groups.*controller_users`},
		{"root rbac: parent path", provider + `resource "depctrl_root_rbac" "x" {
  controller_users = ["depctrl-controller"]
  parent_paths     = ["org"]
}`, `(?s)parent_paths`},

		// Shards.
		{"shard: no credentials", provider + `resource "depctrl_shard" "x" {
  name          = "root"
  webhook_users = ["depctrl-webhook"]
}`, `(?s)kubeconfig_path.*client_certificate`},
		{"shard: two kinds of credentials", provider + fmt.Sprintf(`resource "depctrl_shard" "x" {
  name                    = "root"
  kubeconfig_path         = %q
  client_certificate_path = "cert.pem"
  client_key_path         = "key.pem"
  webhook_users           = ["depctrl-webhook"]
}`, kcp), `(?s)kubeconfig_path.*client_certificate`},
		{"shard: certificate without key", provider + `resource "depctrl_shard" "x" {
  name                    = "root"
  client_certificate_path = "cert.pem"
  webhook_users           = ["depctrl-webhook"]
}`, `(?s)client_key_path`},
		{"shard: context without a kubeconfig", provider + `resource "depctrl_shard" "x" {
  name                    = "root"
  client_certificate_path = "cert.pem"
  client_key_path         = "key.pem"
  context                 = "system-masters"
  webhook_users           = ["depctrl-webhook"]
}`, `(?s)context.*client_certificate_path`},
		{"shard: plain http URL", provider + fmt.Sprintf(`resource "depctrl_shard" "x" {
  name            = "root"
  url             = "http://shard.example.com"
  kubeconfig_path = %q
  webhook_users   = ["depctrl-webhook"]
}`, kcp), `(?s)Attribute url`},
		{"shard: read resource", provider + fmt.Sprintf(`resource "depctrl_shard" "x" {
  name            = "root"
  kubeconfig_path = %q
  webhook_users   = ["depctrl-webhook"]
  read_resources  = ["VirtualMachines"]
  protected_resources = ["vpcs.network.example.io"]
}`, kcp), `(?s)read_resources`},
		{"shard: protected_resources without read_resources", provider + fmt.Sprintf(`resource "depctrl_shard" "x" {
  name                = "root"
  kubeconfig_path     = %q
  webhook_users       = ["depctrl-webhook"]
  protected_resources = ["vpcs.network.example.io"]
}`, kcp), `(?s)protected_resources needs read_resources`},
		{"shard: read_resources without protected_resources", provider + fmt.Sprintf(`resource "depctrl_shard" "x" {
  name            = "root"
  kubeconfig_path = %q
  webhook_users   = ["depctrl-webhook"]
  read_resources  = ["virtualmachines.compute.example.io"]
}`, kcp), `(?s)read_resources needs protected_resources.*List\s+the\s+types\s+your\s+rules\s+protect`},
		{"shard: reindex without read_resources", provider + fmt.Sprintf(`resource "depctrl_shard" "x" {
  name            = "root"
  kubeconfig_path = %q
  webhook_users   = ["depctrl-webhook"]
  reindex         = true
}`, kcp), `(?s)reindex needs read_resources.*may patch everything already`},
		{"shard: nobody to grant", provider + fmt.Sprintf(`resource "depctrl_shard" "x" {
  name            = "root"
  kubeconfig_path = %q
}`, kcp), `(?s)webhook_users.*webhook_groups|webhook_groups.*webhook_users`},

		// Rules.
		{"rule: field path without a dot", provider + rule("", okDependency("field_ref", `{ path = "spec.vpcRef.name" }`)), `(?s)field_ref.*must start with a dot`},
		{"rule: field path with an index", provider + rule("", okDependency("field_ref", `{ path = ".spec.vpcs[0].name" }`)), `(?s)field_ref.*only \[\*\]`},
		{"rule: field path ends with a dot", provider + rule("", okDependency("field_ref", `{ path = ".spec." }`)), `(?s)field_ref.*ends with a dot`},
		{"rule: dependency group", provider + rule("", okDependency("group", `"Network.Example.io"`)), `(?s)dependency.*group`},
		{"rule: dependency resource", provider + rule("", okDependency("resource", `"VPCs"`)), `(?s)dependency.*resource`},
		{"rule: export path", provider + rule("", okDependency("api_export_ref", `{ path = "root::network", name = "network.example.io" }`)), `(?s)api_export_ref.path.*workspace path`},
		{"rule: export path segment too long", provider + rule("", okDependency("api_export_ref", `{ path = "root:`+strings.Repeat("n", 64)+`", name = "network.example.io" }`)), `(?s)api_export_ref.path.*at most 63`},
		{"rule: dependent kind", provider + rule(`api_export_name = "compute.example.io"
    group = "compute.example.io"
    version = "v1"
    kind = "virtual machine"
    resource = "virtualmachines"`, ""), `(?s)kind`},
		{"rule: dependent version", provider + rule(`api_export_name = "compute.example.io"
    group = "compute.example.io"
    version = "1"
    kind = "VirtualMachine"
    resource = "virtualmachines"`, ""), `(?s)version`},

		// The runtime.
		{"runtime: memory", provider + runtime(webhook(`, memory_limit = "lots"`)), `(?s)webhook.memory_limit.*not a Kubernetes quantity`},
		{"runtime: port taken by the webhook's probes", provider + runtime(webhook(`, port = 8083`)), `(?s)webhook.port`},
		{"runtime: kubeconfig without a workspace", provider + fmt.Sprintf(`resource "depctrl_runtime" "bad" {
  controller = { kubeconfig_path = %q }
  webhook    = { kubeconfig_path = %q }
}`, depctrl, noWorkspace), `(?s)webhook.kubeconfig_path.*does not name a\s+workspace`},
		{"runtime: two kubeconfigs", provider + fmt.Sprintf(`resource "depctrl_runtime" "bad" {
  controller = { kubeconfig_path = %q, kubeconfig = "x" }
  webhook    = { kubeconfig_path = %q }
}`, depctrl, depctrl), `(?s)controller.kubeconfig`},
		{"runtime: kubeconfig file missing", provider + fmt.Sprintf(`resource "depctrl_runtime" "bad" {
  controller = { kubeconfig_path = "/nonexistent/controller.kubeconfig" }
  webhook    = { kubeconfig_path = %q }
}`, depctrl), `(?s)controller.kubeconfig_path.*nonexistent`},
		{"runtime: namespace", provider + runtime(`namespace = "Not_A_Name"`+"\n"+webhook("")), `(?s)namespace.*DNS label`},
		{"runtime: image with a tag", provider + runtime(`image = "registry.example.com/depctrl:v1"`+"\n"+webhook("")), `(?s)Attribute image`},
		{"runtime: extra argument", provider + runtime(webhook(`, extra_args = ["verbose"]`)), `(?s)extra_args.*flag`},
		{"runtime: certificate validity", provider + runtime(webhook(`, certificate_validity = "10m"`)), `(?s)webhook.certificate_validity.*too short`},
		{"runtime: renewal window", provider + runtime(webhook(`, certificate_validity = "2h", certificate_renew_before = "3h"`)), `(?s)certificate_renew_before.*shorter than\s+webhook.certificate_validity`},
		{"runtime: http webhook URL", provider + runtime(webhook(`, url = "http://depctrl.example.com/validate"`)), `(?s)webhook.url`},
		{"runtime: webhook URL with a query", provider + runtime(webhook(`, url = "https://depctrl.example.com/validate?debug=1"`)), `(?s)webhook.url.*query is not allowed`},
		{"runtime: webhook peer not a CIDR", provider + runtime(`network_policy = { webhook_cidrs = ["10.0.0.1"] }`+"\n"+webhook("")), `(?s)network_policy.webhook_cidrs\[0\].*not a CIDR`},
		{"runtime: webhook peer with host bits", provider + runtime(`network_policy = { webhook_cidrs = ["10.0.0.0/8", "10.20.30.40/16"] }`+"\n"+webhook("")), `(?s)network_policy.webhook_cidrs\[1\].*write\s+10.20.0.0/16`},
		{"runtime: metrics peer not a CIDR", provider + runtime(`network_policy = { metrics_cidrs = ["monitoring"] }`+"\n"+webhook("")), `(?s)network_policy.metrics_cidrs\[0\].*not a CIDR`},
		{"runtime: webhook peer namespace", provider + runtime(`network_policy = { webhook_namespaces = ["kcp-*"] }`+"\n"+webhook("")), `(?s)network_policy.webhook_namespaces\[0\].*namespace name`},
		{"object: two documents", provider + object(`"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n"`),
			`(?s)Invalid manifest.*manifest: it holds 2 YAML documents`},
		{"object: a list", provider + object(`yamlencode([{ apiVersion = "v1", kind = "Namespace", metadata = { name = "a" } }])`), `(?s)Invalid manifest.*manifest: it is a list`},
		{"object: no name", provider + object(`yamlencode({ apiVersion = "v1", kind = "Namespace", metadata = { labels = { a = "b" } } })`),
			`(?s)Invalid manifest.*manifest: it has no metadata.name`},
		{"object: status", provider + object(`yamlencode({ apiVersion = "v1", kind = "Namespace", metadata = { name = "a" }, status = { phase = "Active" } })`),
			`(?s)Invalid manifest.*manifest: it sets status`},
		{"object: workspace path", provider + strings.Replace(object(`yamlencode({ apiVersion = "v1", kind = "Namespace", metadata = { name = "a" } })`), `"root:team-a"`, `"team-a"`, 1),
			`(?s)Attribute workspace_path`},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d bad configurations", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:   tc.config,
					PlanOnly: true,
					// Anchored at "Error:", so an echoed plan cannot match.
					ExpectError: regexp.MustCompile(`Error: (?s:.*)` + tc.want),
				}},
			})
		})
	}
}
