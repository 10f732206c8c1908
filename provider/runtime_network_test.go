package provider

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/defaults"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
)

// TestNetworkPolicyImport: what the renderer writes, an import reads back
// as the same configuration, so that ImportStateVerify and the next plan
// agree with what was applied.
func TestNetworkPolicyImport(t *testing.T) {
	tests := []struct {
		name   string
		policy deploy.NetworkPolicy
	}{
		{"default", deploy.DefaultNetworkPolicy()},
		{"narrowed", deploy.NetworkPolicy{Enabled: true, WebhookCIDRs: []string{"192.0.2.0/28", "2001:db8::/64"}, WebhookNamespaces: []string{"kcp-shards", "kcp"},
			MetricsCIDRs: []string{"198.51.100.0/24"}, MetricsNamespaces: []string{"monitoring"}}},
		{"nobody", deploy.NetworkPolicy{Enabled: true, WebhookCIDRs: []string{}, WebhookNamespaces: []string{}, MetricsCIDRs: []string{}, MetricsNamespaces: []string{}}},
		{"kcp elsewhere, metrics from everywhere in the cluster", deploy.NetworkPolicy{Enabled: true, WebhookCIDRs: []string{"203.0.113.0/24"}, WebhookNamespaces: []string{},
			MetricsCIDRs: []string{}, MetricsNamespaces: []string{"*"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := deploy.Config{
				Tag:           "v1",
				Controller:    deploy.Component{Replicas: 1, Kubeconfig: []byte("k")},
				Webhook:       deploy.Component{Replicas: 2, Kubeconfig: []byte("k")},
				TLS:           deploy.TLS{CACert: []byte("ca"), Cert: []byte("c"), Key: []byte("k")},
				NetworkPolicy: &tt.policy,
			}
			objs, err := deploy.Render(c)
			if err != nil {
				t.Fatal(err)
			}
			var live *networkingv1.NetworkPolicy
			for _, o := range objs {
				if o.GetKind() == "NetworkPolicy" && o.GetName() == "depctrl-webhook" {
					live = &networkingv1.NetworkPolicy{}
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, live); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := networkPolicyFromCluster(live); !reflect.DeepEqual(got, tt.policy) {
				t.Errorf("imported\n %+v\nwant\n %+v", got, tt.policy)
			}
		})
	}
	t.Run("none in the cluster: disabled", func(t *testing.T) {
		if got := networkPolicyFromCluster(nil); got.Enabled {
			t.Errorf("imported %+v without a NetworkPolicy", got)
		}
	})
}

// TestNetworkPolicyDefaults: the data source (no schema defaults) renders
// what the resource renders for the same configuration.
func TestNetworkPolicyDefaults(t *testing.T) {
	ctx := context.Background()
	partial := &networkPolicyModel{
		Enabled: types.BoolNull(), WebhookCIDRs: stringList([]string{"192.0.2.0/28"}),
		WebhookNamespaces: types.ListNull(types.StringType), MetricsCIDRs: types.ListNull(types.StringType), MetricsNamespaces: stringList(nil),
	}
	want := deploy.DefaultNetworkPolicy()
	want.WebhookCIDRs, want.MetricsNamespaces = []string{"192.0.2.0/28"}, []string{}
	for name, tt := range map[string]struct {
		in   *networkPolicyModel
		want deploy.NetworkPolicy
	}{
		"unset":   {nil, deploy.DefaultNetworkPolicy()},
		"partial": {partial, want},
	} {
		got, diags := tt.in.withDefaults().deploy(ctx)
		if diags.HasError() {
			t.Fatal(diags)
		}
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", name, *got, tt.want)
		}
	}
	// The resource's schema default is the renderer's default.
	def := networkPolicySchema().Default
	resp := &defaults.ObjectResponse{}
	def.DefaultObject(ctx, defaults.ObjectRequest{}, resp)
	var m networkPolicyModel
	if diags := resp.PlanValue.As(ctx, &m, basetypes.ObjectAsOptions{}); diags.HasError() {
		t.Fatal(diags)
	}
	got, _ := m.deploy(ctx)
	if !reflect.DeepEqual(*got, deploy.DefaultNetworkPolicy()) {
		t.Errorf("schema default %+v, renderer default %+v", *got, deploy.DefaultNetworkPolicy())
	}
}

func TestCIDRValidator(t *testing.T) {
	tests := []struct{ value, want string }{
		{"10.0.0.0/8", ""},
		{"fd00::/8", ""},
		{"10.0.0.0", "not a CIDR"},
		{"10.1.0.0/8", "write 10.0.0.0/8"},
		{"kcp.example.com", "not a CIDR"},
	}
	at := path.Root("network_policy").AtName("webhook_cidrs").AtListIndex(0)
	for _, tt := range tests {
		resp := &validator.StringResponse{}
		cidrValidator().ValidateString(context.Background(), validator.StringRequest{Path: at, ConfigValue: types.StringValue(tt.value)}, resp)
		if tt.want == "" {
			if resp.Diagnostics.HasError() {
				t.Errorf("%q: %v", tt.value, resp.Diagnostics)
			}
			continue
		}
		if !resp.Diagnostics.HasError() {
			t.Errorf("%q accepted", tt.value)
			continue
		}
		detail := resp.Diagnostics[0].Detail()
		if !strings.Contains(detail, tt.want) || !strings.Contains(detail, "network_policy.webhook_cidrs[0]") {
			t.Errorf("%q: %q does not name the attribute and say %q", tt.value, detail, tt.want)
		}
	}
}

// TestNetworkPolicyUnknown: a configuration may make network_policy unknown
// as a whole (a conditional on a variable); validation and plan must take
// it, and render nothing until it is known.
func TestNetworkPolicyUnknown(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]types.Object{
		"unknown": types.ObjectUnknown(networkPolicyAttrTypes),
		"null":    types.ObjectNull(networkPolicyAttrTypes),
	} {
		m, diags := networkPolicyOf(ctx, o)
		if m != nil || diags.HasError() {
			t.Errorf("%s: got %+v, %v", name, m, diags)
		}
	}
	in := &runtimeInputs{Controller: &runtimeComponentModel{}, Webhook: &webhookModel{}, NetworkPolicy: types.ObjectUnknown(networkPolicyAttrTypes)}
	if in.known() {
		t.Error("inputs with an unknown network_policy count as known")
	}
	in.NetworkPolicy = networkPolicyFrom(deploy.DefaultNetworkPolicy()).object()
	if !in.known() {
		t.Error("inputs with a known network_policy count as unknown")
	}
}
