package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// TestAccRuntimeManifestsDataSource_basic renders the runtime as YAML and checks that it is
// exactly what the renderer behind depctrl_runtime produces for the same
// settings.
func TestAccRuntimeManifestsDataSource_basic(t *testing.T) {
	e := accEnv(t, env.SingleShard)
	dir := t.TempDir()
	kc, err := e.IdentityKubeconfig(e.MustIdentity(env.ControllerUser), "root:depctrl")
	check.Must(t, err)
	kcPath := filepath.Join(dir, "kubeconfig")
	check.Must(t, os.WriteFile(kcPath, kc, 0o600))
	bundle, err := certs.Issue("depctrl-webhook", []string{"depctrl-webhook.gitops.svc"}, 24*time.Hour)
	check.Must(t, err)

	self, err := process.SelfContained(kc, dir, "", "")
	check.Must(t, err)
	want, err := deploy.Render(deploy.Config{
		Namespace: "gitops", CreateNamespace: false, Name: "depctrl", Tag: "v9.9.9",
		Controller: deploy.Component{Replicas: deploy.DefaultReplicas, Kubeconfig: self, ExtraArgs: []string{"--zap-log-level=debug"},
			Resources: deploy.Resources{CPURequest: defaultCPURequest, MemoryRequest: defaultMemoryRequest, MemoryLimit: defaultMemoryLimit}},
		Webhook: deploy.Component{Replicas: 3, Kubeconfig: self,
			Resources: deploy.Resources{CPURequest: defaultCPURequest, MemoryRequest: defaultMemoryRequest, MemoryLimit: defaultMemoryLimit}},
		TLS: deploy.TLS{CACert: bundle.CACert, Cert: bundle.ServerCert, Key: bundle.ServerKey},
		// What is not set in the configuration has the resource's default.
		SettleObjects: true,
		NetworkPolicy: &deploy.NetworkPolicy{Enabled: true, WebhookCIDRs: deploy.DefaultNetworkPolicy().WebhookCIDRs, WebhookNamespaces: []string{"kcp"},
			MetricsCIDRs: []string{"192.0.2.0/24"}, MetricsNamespaces: []string{deploy.AllNamespaces}},
	}.WithDefaults())
	check.Must(t, err)
	wantYAML, err := deploy.YAML(want)
	check.Must(t, err)

	tls := fmt.Sprintf(`    tls_certificate = <<-EOT
%sEOT
    tls_private_key = <<-EOT
%sEOT`, bundle.ServerCert, bundle.ServerKey)
	config := func(tls string) string {
		return providerConfig(e) + fmt.Sprintf(`
data "depctrl_runtime_manifests" "gitops" {
  namespace        = "gitops"
  create_namespace = false
  image_tag        = "v9.9.9"

  network_policy = {
    webhook_namespaces = ["kcp"]
    metrics_cidrs      = ["192.0.2.0/24"]
  }

  controller = {
    kubeconfig_path = %q
    extra_args      = ["--zap-log-level=debug"]
  }

  webhook = {
    kubeconfig_path = %q
    replicas        = 3
    ca_certificate  = <<-EOT
%sEOT
%s
  }
}
`, kcPath, kcPath, bundle.CACert, tls)
	}
	ds := "data.depctrl_runtime_manifests.gitops"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// Neither a certificate nor an existing Secret.
				Config:      config(""),
				ExpectError: regexp.MustCompile(`tls_secret_name|tls_certificate`),
			},
			{
				Config: config(tls),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("webhook_url"), knownvalue.StringExact("https://depctrl-webhook.gitops.svc:443/validate")),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("manifests"), knownvalue.MapSizeExact(len(want))),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("manifests").AtMapKey("Deployment/depctrl-webhook"),
						knownvalue.StringRegexp(regexp.MustCompile(`replicas: 3`))),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("manifests").AtMapKey("PodDisruptionBudget/depctrl-webhook"),
						knownvalue.StringRegexp(regexp.MustCompile(`maxUnavailable: 1`))),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("manifests").AtMapKey("NetworkPolicy/depctrl-webhook"),
						knownvalue.StringRegexp(regexp.MustCompile(`(?s)cidr: 192\.0\.2\.0/24.*port: metrics`))),
				},
				Check: resource.TestCheckResourceAttrWith(ds, "yaml", func(got string) error {
					if got != string(wantYAML) {
						return fmt.Errorf("the data source renders differently from the renderer:\n%s", firstDifference(got, string(wantYAML)))
					}
					return nil
				}),
			},
			{
				// webhook.deferred_deletion, as in depctrl_runtime: the
				// webhook's argument, which is absent above.
				Config: config(tls + "\n    deferred_deletion = true"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("manifests").AtMapKey("Deployment/depctrl-webhook"),
						knownvalue.StringRegexp(regexp.MustCompile(`- --deferred-deletion=true`))),
				},
			},
		},
	})
}

func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths differ: %d and %d lines", len(al), len(bl))
}
