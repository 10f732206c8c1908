package deploy

import (
	"strings"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/controller"
)

// TestControllerReachesTheIndexEndpoint: the controller derives the
// reference index endpoint from the --webhook-url rendered here, so the
// runtime needs no flag of its own for it; the derived URL must name the
// path the webhook serves.
func TestControllerReachesTheIndexEndpoint(t *testing.T) {
	for name, url := range map[string]string{
		"the Service":  "",
		"webhook.url":  "https://depctrl-webhook.example.com" + v1alpha1.ValidatePath,
		"with a route": "https://kcp-hooks.example.com/depctrl" + v1alpha1.ValidatePath,
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Namespace, cfg.Name, cfg.WebhookURL = "depctrl-system", "depctrl", url
			validate := cfg.EffectiveWebhookURL()
			want := strings.TrimSuffix(validate, v1alpha1.ValidatePath) + v1alpha1.MutatePath
			if got := controller.DeriveMutateURL(validate); got != want {
				t.Fatalf("the controller derives %q from --webhook-url=%s, the webhook serves %q", got, validate, want)
			}
		})
	}
}
