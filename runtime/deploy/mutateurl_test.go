package deploy

import (
	"strings"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/controller"
	"github.com/depctrl/terraform-provider-depctrl/runtime/webhook"
)

// TestControllerReachesTheIndexEndpoint: the controller derives the
// reference index endpoint from the --webhook-url rendered here, so the
// runtime needs no flag of its own for it; the derived URL must name the
// path the webhook serves.
func TestControllerReachesTheIndexEndpoint(t *testing.T) {
	for name, url := range map[string]string{
		"the Service":  "",
		"webhook.url":  "https://depctrl-webhook.example.com" + webhook.ValidatePath,
		"with a route": "https://kcp-hooks.example.com/depctrl" + webhook.ValidatePath,
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Namespace, cfg.Name, cfg.WebhookURL = "depctrl-system", "depctrl", url
			validate := cfg.EffectiveWebhookURL()
			want := strings.TrimSuffix(validate, webhook.ValidatePath) + webhook.MutatePath
			if got := controller.DeriveMutateURL(validate); got != want {
				t.Fatalf("the controller derives %q from --webhook-url=%s, the webhook serves %q", got, validate, want)
			}
		})
	}
}
