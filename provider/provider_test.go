package provider

import (
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
