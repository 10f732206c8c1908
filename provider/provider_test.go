package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// testAccProtoV6ProviderFactories runs the provider in the test process, so
// acceptance tests exercise exactly this code.
var testAccProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"depctrl": providerserver.NewProtocol6WithError(New("test")()),
}

func TestMain(m *testing.M) {
	os.Exit(env.RunTests(m))
}

// accEnv returns the kcp environment for an acceptance test, or skips the
// test when TF_ACC is unset, before any kcp is started.
func accEnv(t *testing.T, topology env.Topology) *env.Env {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance tests run only with TF_ACC=1")
	}
	// Settings from the developer's shell must not leak into the provider
	// blocks the tests write.
	for _, v := range []string{EnvKubeconfig, EnvContext, EnvHost, EnvToken, EnvClientCert, EnvClientKey, EnvClusterCA, EnvInsecure,
		EnvKubeKubeconfig, EnvKubeContext, EnvKubeHost, EnvKubeToken, EnvKubeClientCert, EnvKubeClientKey, EnvKubeClusterCA, EnvKubeInsecure} {
		t.Setenv(v, "")
	}
	return env.ForTest(t, topology)
}

// testConfigFails applies config and expects an error that matches want,
// for the tables of configurations that kcp or the provider refuses.
func testConfigFails(t *testing.T, config, want string) {
	t.Helper()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    []resource.TestStep{{Config: config, ExpectError: regexp.MustCompile(want)}},
	})
}

// providerConfig is a provider block that reaches e as kcp-admin.
func providerConfig(e *env.Env) string {
	return fmt.Sprintf("provider \"depctrl\" {\n  kubeconfig_path = %q\n}\n", e.AdminKubeconfig)
}

func TestAccProvider_configurationErrors(t *testing.T) {
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

func TestAccProvider_configurationUnknown(t *testing.T) {
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
