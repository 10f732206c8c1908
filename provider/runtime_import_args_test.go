package provider

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
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
			name: "everything set", cfg: deploy.Config{Namespace: "ns", Name: "dc", APIExportName: "deps", WebhookPort: 8443, SkipProtectionGroups: []string{"ops", "sre"}, DeferredDeletion: true},
			extraC: []string{"--resync-period=5m"}, extraW: []string{"--list-page-size=10", "--zap-log-level=debug"},
		},
		{
			name: "deferred deletion without groups", cfg: deploy.Config{Namespace: "ns", Name: "dc", APIExportName: "deps", WebhookPort: 9443, SettleObjects: true, DeferredDeletion: true},
			extraW: []string{"--deferred-deletion-resync=1m"},
		},
		{
			// Extra arguments right where a rendered option could
			// stand are still the user's.
			name: "groups without deferred deletion", cfg: deploy.Config{Namespace: "ns", Name: "dc", APIExportName: "deps", WebhookPort: 9443, SkipProtectionGroups: []string{"ops"}},
			extraW: []string{"--zap-log-level=debug"},
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
			if a.webhook.Settle != tt.cfg.SettleObjects || !slices.Equal(a.webhook.SkipProtectionGroups, tt.cfg.SkipProtectionGroups) ||
				a.webhook.DeferredDeletion != tt.cfg.DeferredDeletion {
				t.Errorf("webhook options: settle %v, groups %v, deferred deletion %v", a.webhook.Settle, a.webhook.SkipProtectionGroups, a.webhook.DeferredDeletion)
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
		if a.webhook.DeferredDeletion {
			t.Fatal("deferred deletion read as on without its flag")
		}
	})
	t.Run("a rendered value the binary would refuse", func(t *testing.T) {
		if _, err := readRuntimeArgs([]string{"--leader-elect=maybe"}, nil); err == nil {
			t.Fatal("accepted")
		}
	})
}

// kcpKubeconfig is a kubeconfig the runtime accepts: its server names the
// dep-ctrl workspace through the front-proxy.
const kcpKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: kcp
  cluster:
    server: https://kcp.example.com/clusters/root:depctrl
    insecure-skip-tls-verify: true
users:
- name: webhook
  user:
    token: t
contexts:
- name: kcp
  context: {cluster: kcp, user: webhook}
current-context: kcp
`

// TestImportRuntime: a runtime rendered with webhook.deferred_deletion on
// or off imports with it on or off, and the import renders again exactly
// the webhook arguments that were deployed, so that the plan after it is
// empty; the flag is not among the user's extra arguments.
func TestImportRuntime(t *testing.T) {
	ctx := context.Background()
	kubeconfig := []byte(kcpKubeconfig)
	for _, tt := range []struct {
		name     string
		deferred bool
		groups   []string
	}{
		{name: "without deferred deletion"},
		{name: "with deferred deletion", deferred: true},
		{name: "with deferred deletion and skip-protection groups", deferred: true, groups: []string{"ops"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := deploy.Config{
				Namespace: "ns", Name: "dc", Tag: "v1", SettleObjects: true,
				Controller:           deploy.Component{Replicas: 1, Kubeconfig: kubeconfig},
				Webhook:              deploy.Component{Replicas: 2, Kubeconfig: kubeconfig, ExtraArgs: []string{"--zap-log-level=debug"}},
				SkipProtectionGroups: tt.groups,
				DeferredDeletion:     tt.deferred,
			}.WithDefaults()
			caCert, caKey, err := certs.NewCA("dc-webhook-ca", time.Hour)
			check.Must(t, err)
			serving, err := certs.IssueServing(caCert, caKey, "dc-webhook", cfg.ServiceHosts(), time.Hour)
			check.Must(t, err)
			cfg.TLS = deploy.TLS{CACert: caCert, Cert: serving.ServerCert, Key: serving.ServerKey, IssuerCert: caCert, IssuerKey: caKey}
			objs, err := deploy.Render(cfg)
			check.Must(t, err)
			var typed []k8sruntime.Object
			deployed := map[string][]string{}
			for _, o := range objs {
				obj, err := scheme.Scheme.New(o.GroupVersionKind())
				check.Must(t, err)
				check.Must(t, k8sruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, obj))
				typed = append(typed, obj)
				if d, ok := obj.(*appsv1.Deployment); ok {
					deployed[d.Name] = d.Spec.Template.Spec.Containers[0].Args
				}
			}

			m := runtimeModel{}
			m.Namespace, m.Name = types.StringValue(cfg.Namespace), types.StringValue(cfg.Name)
			priv := &privateState{}
			found, err := (&runtimeResource{}).importRuntime(ctx, fake.NewClientset(typed...), &m, priv)
			if err != nil || !found {
				t.Fatalf("import: found %v, %v", found, err)
			}
			if got := m.Webhook.DeferredDeletion; got != types.BoolValue(tt.deferred) {
				t.Errorf("webhook.deferred_deletion = %v, want %v", got, tt.deferred)
			}
			var extra []string
			if d := m.Webhook.ExtraArgs.ElementsAs(ctx, &extra, false); d.HasError() {
				t.Fatalf("webhook.extra_args: %v", d)
			}
			if !slices.Equal(extra, []string{"--zap-log-level=debug"}) {
				t.Errorf("webhook.extra_args = %q", extra)
			}
			for _, o := range priv.applied() {
				if o.GetKind() != "Deployment" {
					continue
				}
				var d appsv1.Deployment
				check.Must(t, k8sruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d))
				if got := d.Spec.Template.Spec.Containers[0].Args; !slices.Equal(got, deployed[d.Name]) {
					t.Errorf("%s renders again as\n %q\nwas deployed with\n %q", d.Name, got, deployed[d.Name])
				}
			}
		})
	}
}

// TestFillAddedAttributes: a state written before webhook.deferred_deletion
// existed reads it as off, what its deployment runs with, so that the plan
// after upgrading the provider is empty; a value in state stays.
func TestFillAddedAttributes(t *testing.T) {
	for _, tt := range []struct {
		name     string
		in, want types.Bool
	}{
		{"from before the attribute", types.BoolNull(), types.BoolValue(false)},
		{"off", types.BoolValue(false), types.BoolValue(false)},
		{"on", types.BoolValue(true), types.BoolValue(true)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := runtimeModel{}
			m.Webhook = &webhookModel{}
			m.Webhook.DeferredDeletion = tt.in
			m.fillAddedAttributes()
			if m.Webhook.DeferredDeletion != tt.want {
				t.Errorf("webhook.deferred_deletion = %v, want %v", m.Webhook.DeferredDeletion, tt.want)
			}
		})
	}
}

// TestDeferredDeletionConfig: webhook.deferred_deletion reaches the
// renderer from depctrl_runtime and from depctrl_runtime_manifests alike;
// null (the data source's attribute left out) is off.
func TestDeferredDeletionConfig(t *testing.T) {
	ctx := context.Background()
	component := componentModel{
		KubeconfigPath: types.StringNull(), Kubeconfig: types.StringValue(kcpKubeconfig), Context: types.StringNull(),
		Replicas: types.Int64Value(1), ExtraArgs: types.ListNull(types.StringType),
	}
	for _, tt := range []struct {
		name string
		in   types.Bool
		want bool
	}{
		{"left out", types.BoolNull(), false},
		{"off", types.BoolValue(false), false},
		{"on", types.BoolValue(true), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			settings := webhookSettings{Port: types.Int64Value(9443), SkipProtectionGroups: types.ListNull(types.StringType), DeferredDeletion: tt.in}
			resourceInputs := &runtimeInputs{
				runtimeSettings: runtimeSettings{Namespace: types.StringValue("ns"), Name: types.StringValue("dc")},
				Controller:      &runtimeComponentModel{componentModel: component},
				Webhook:         &webhookModel{runtimeComponentModel: runtimeComponentModel{componentModel: component}, webhookSettings: settings},
			}
			data := &runtimeManifestsModel{Controller: &component, Webhook: &manifestsWebhookModel{componentModel: component, webhookSettings: settings}}
			for what, in := range map[string]*runtimeInputs{"depctrl_runtime": resourceInputs, "depctrl_runtime_manifests": data.inputs("v1")} {
				cfg, diags := in.deployConfig(ctx)
				if diags.HasError() {
					t.Fatalf("%s: %v", what, diags)
				}
				if cfg.DeferredDeletion != tt.want {
					t.Errorf("%s: DeferredDeletion = %v, want %v", what, cfg.DeferredDeletion, tt.want)
				}
				if on := slices.Contains(cfg.WebhookArgs(), "--deferred-deletion=true"); on != tt.want {
					t.Errorf("%s: webhook arguments %q", what, cfg.WebhookArgs())
				}
			}
		})
	}
}
