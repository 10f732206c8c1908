package provider

import (
	"slices"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
)

// TestReadRuntimeArgs: the import reads back, with the binaries' own flag
// sets, what the renderer wrote for a configuration, and keeps the user's
// extra arguments apart; a deployment rendered before settling was the
// default, without the flag, had it off.
func TestReadRuntimeArgs(t *testing.T) {
	for _, tt := range []struct {
		name   string
		cfg    deploy.Config
		extraC []string
		extraW []string
	}{
		{name: "defaults", cfg: deploy.Config{Namespace: "ns", Name: "dc", APIExportName: "dependencies.opendefense.cloud", WebhookPort: 9443, SettleObjects: true}},
		{
			name: "everything set", cfg: deploy.Config{Namespace: "ns", Name: "dc", APIExportName: "deps", WebhookPort: 8443, SkipProtectionGroups: []string{"ops", "sre"}},
			extraC: []string{"--resync-period=5m"}, extraW: []string{"--list-page-size=10", "--zap-log-level=debug"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := readRuntimeArgs(append(tt.cfg.ControllerArgs(), tt.extraC...), append(tt.cfg.WebhookArgs(), tt.extraW...))
			if err != nil {
				t.Fatal(err)
			}
			if a.controller.ExportName != tt.cfg.APIExportName || a.controller.WebhookURL != tt.cfg.EffectiveWebhookURL() {
				t.Errorf("controller options %+v", a.controller)
			}
			if a.webhook.Settle != tt.cfg.SettleObjects || !slices.Equal(a.webhook.SkipProtectionGroups, tt.cfg.SkipProtectionGroups) {
				t.Errorf("webhook options: settle %v, groups %v", a.webhook.Settle, a.webhook.SkipProtectionGroups)
			}
			if !slices.Equal(a.controllerExtra, tt.extraC) || !slices.Equal(a.webhookExtra, tt.extraW) {
				t.Errorf("extra %v / %v, want %v / %v", a.controllerExtra, a.webhookExtra, tt.extraC, tt.extraW)
			}
		})
	}
	t.Run("rendered before settling was the default", func(t *testing.T) {
		a, err := readRuntimeArgs(nil, []string{"--kubeconfig=/k/kubeconfig", "--apiexport-name=x", "--tls-cert-dir=/tls"})
		if err != nil || a.webhook.Settle {
			t.Fatalf("settle %v, %v", a.webhook.Settle, err)
		}
	})
	t.Run("a rendered value the binary would refuse", func(t *testing.T) {
		if _, err := readRuntimeArgs([]string{"--leader-elect=maybe"}, nil); err == nil {
			t.Fatal("accepted")
		}
	})
}
