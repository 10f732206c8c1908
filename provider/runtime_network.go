package provider

import (
	"context"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
)

// networkPolicyModel is depctrl_runtime's network_policy: who may connect
// to the runtime's pods.
type networkPolicyModel struct {
	Enabled           types.Bool `tfsdk:"enabled"`
	WebhookCIDRs      types.List `tfsdk:"webhook_cidrs"`
	WebhookNamespaces types.List `tfsdk:"webhook_namespaces"`
	MetricsCIDRs      types.List `tfsdk:"metrics_cidrs"`
	MetricsNamespaces types.List `tfsdk:"metrics_namespaces"`
}

var networkPolicyAttrTypes = map[string]attr.Type{
	"enabled":            types.BoolType,
	"webhook_cidrs":      types.ListType{ElemType: types.StringType},
	"webhook_namespaces": types.ListType{ElemType: types.StringType},
	"metrics_cidrs":      types.ListType{ElemType: types.StringType},
	"metrics_namespaces": types.ListType{ElemType: types.StringType},
}

// networkPolicyFrom is the model of a renderer configuration.
func networkPolicyFrom(p deploy.NetworkPolicy) *networkPolicyModel {
	return &networkPolicyModel{
		Enabled:           types.BoolValue(p.Enabled),
		WebhookCIDRs:      stringList(p.WebhookCIDRs),
		WebhookNamespaces: stringList(p.WebhookNamespaces),
		MetricsCIDRs:      stringList(p.MetricsCIDRs),
		MetricsNamespaces: stringList(p.MetricsNamespaces),
	}
}

func (m *networkPolicyModel) object() types.Object {
	return types.ObjectValueMust(networkPolicyAttrTypes, map[string]attr.Value{
		"enabled": m.Enabled, "webhook_cidrs": m.WebhookCIDRs, "webhook_namespaces": m.WebhookNamespaces,
		"metrics_cidrs": m.MetricsCIDRs, "metrics_namespaces": m.MetricsNamespaces,
	})
}

// networkPolicyOf decodes network_policy; nil when it is null or unknown.
func networkPolicyOf(ctx context.Context, o types.Object) (*networkPolicyModel, diag.Diagnostics) {
	if o.IsNull() || o.IsUnknown() {
		return nil, nil
	}
	m := &networkPolicyModel{}
	diags := o.As(ctx, m, basetypes.ObjectAsOptions{})
	return m, diags
}

func (m *networkPolicyModel) values() []unknowable {
	return []unknowable{m.Enabled, m.WebhookCIDRs, m.WebhookNamespaces, m.MetricsCIDRs, m.MetricsNamespaces}
}

// withDefaults fills what the configuration left null, as the resource's
// schema defaults would; nil stands for the whole default.
func (m *networkPolicyModel) withDefaults() *networkPolicyModel {
	def := networkPolicyFrom(deploy.DefaultNetworkPolicy())
	if m == nil {
		return def
	}
	out := *m
	if out.Enabled.IsNull() {
		out.Enabled = def.Enabled
	}
	for _, f := range []struct{ v, def *types.List }{
		{&out.WebhookCIDRs, &def.WebhookCIDRs}, {&out.WebhookNamespaces, &def.WebhookNamespaces},
		{&out.MetricsCIDRs, &def.MetricsCIDRs}, {&out.MetricsNamespaces, &def.MetricsNamespaces},
	} {
		if f.v.IsNull() {
			*f.v = *f.def
		}
	}
	return &out
}

// deploy turns the model into the renderer's configuration.
func (m *networkPolicyModel) deploy(ctx context.Context) (*deploy.NetworkPolicy, diag.Diagnostics) {
	var diags diag.Diagnostics
	p := &deploy.NetworkPolicy{Enabled: m.Enabled.ValueBool()}
	for _, f := range []struct {
		list types.List
		into *[]string
	}{{m.WebhookCIDRs, &p.WebhookCIDRs}, {m.WebhookNamespaces, &p.WebhookNamespaces}, {m.MetricsCIDRs, &p.MetricsCIDRs}, {m.MetricsNamespaces, &p.MetricsNamespaces}} {
		*f.into = []string{}
		diags.Append(f.list.ElementsAs(ctx, f.into, false)...)
	}
	return p, diags
}

// networkPolicyDocs describe network_policy in depctrl_runtime and
// depctrl_runtime_manifests.
var networkPolicyDocs = map[string]string{
	"network_policy": "Who may connect to the runtime's pods: one NetworkPolicy per component (`<name>-webhook`, `<name>-controller`), ingress only. " +
		"The webhook answers admission reviews without authenticating its callers, so only kcp's shards should reach its serving port. " +
		"The default keeps kcp reachable wherever it runs on a private network or in this cluster, on any CNI, and shuts out public addresses; " +
		"narrow it to kcp's namespace and the shards' addresses. A policy that leaves kcp out makes kcp refuse every protected delete and every write of a dependent type (the webhook configurations fail closed). " +
		"The kubelet's probes from the pod's own node are always allowed. Unset (default): each attribute's default. Updates in place.",
	"enabled": "Whether to render the NetworkPolicies. Default `true`. Set `false` where the cluster enforces no NetworkPolicies or they are managed elsewhere; " +
		"changing it creates or deletes both policies in place, without restarting a pod.",
	"webhook_cidrs": "Address ranges (CIDRs such as `10.20.0.0/16`) that may reach the webhook's serving port: where kcp's shards run, when kcp is outside this cluster. " +
		"Default `[\"10.0.0.0/8\", \"172.16.0.0/12\", \"192.168.0.0/16\", \"fc00::/7\"]` (private networks). " +
		"Some CNIs (Cilium among them) never match pod-to-pod traffic against CIDRs: for kcp in this cluster, use `webhook_namespaces`. Updates the policy in place; the pods do not restart.",
	"webhook_namespaces": "Namespaces of this cluster whose pods may reach the webhook's serving port, such as `[\"kcp\"]` where kcp's shards run; `\"*\"` admits every namespace. " +
		"Default `[\"*\"]`. `[]` admits no pod of the cluster (kcp runs elsewhere, admitted by `webhook_cidrs`). Updates the policy in place; the pods do not restart.",
	"metrics_cidrs": "Address ranges that may reach the metrics and probe ports of both components (the controller's `8080` and `8081`, the webhook's `8082` and `8083`), for a scraper outside the cluster. " +
		"Default `[]`. Updates the policies in place.",
	"metrics_namespaces": "Namespaces whose pods may reach the metrics and probe ports of both components, such as `[\"monitoring\"]`; `\"*\"` admits every namespace. " +
		"Default `[\"*\"]`. Updates the policies in place.",
}

var namespacePeerRE = regexp.MustCompile(`^(\*|[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)$`)

// networkPolicySchema is network_policy in depctrl_runtime, defaults
// included, so that a plan shows them.
func networkPolicySchema() schema.SingleNestedAttribute {
	def := networkPolicyFrom(deploy.DefaultNetworkPolicy())
	cidrs := func(name string, d types.List) schema.ListAttribute {
		return schema.ListAttribute{
			Optional: true, Computed: true, ElementType: types.StringType,
			Default: listdefault.StaticValue(d), MarkdownDescription: networkPolicyDocs[name],
			Validators: []validator.List{listvalidator.ValueStringsAre(cidrValidator())},
		}
	}
	namespaces := func(name string, d types.List) schema.ListAttribute {
		return schema.ListAttribute{
			Optional: true, Computed: true, ElementType: types.StringType,
			Default: listdefault.StaticValue(d), MarkdownDescription: networkPolicyDocs[name],
			Validators: []validator.List{listvalidator.ValueStringsAre(stringvalidator.RegexMatches(namespacePeerRE,
				`must be a namespace name or "*" (every namespace)`))},
		}
	}
	return schema.SingleNestedAttribute{
		Optional: true, Computed: true, Default: objectdefault.StaticValue(def.object()),
		MarkdownDescription: networkPolicyDocs["network_policy"],
		Attributes: map[string]schema.Attribute{
			"enabled": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: networkPolicyDocs["enabled"],
			},
			"webhook_cidrs":      cidrs("webhook_cidrs", def.WebhookCIDRs),
			"webhook_namespaces": namespaces("webhook_namespaces", def.WebhookNamespaces),
			"metrics_cidrs":      cidrs("metrics_cidrs", def.MetricsCIDRs),
			"metrics_namespaces": namespaces("metrics_namespaces", def.MetricsNamespaces),
		},
	}
}

// networkPolicyFromCluster reads the configuration back from the webhook's
// live NetworkPolicy (nil: none, so the policies were disabled): the
// serving port's peers and the metrics port's. It reads what the renderer
// writes and nothing else; a policy edited by hand imports as what it now
// admits, and the next plan shows the difference.
func networkPolicyFromCluster(p *networkingv1.NetworkPolicy) deploy.NetworkPolicy {
	out := deploy.DefaultNetworkPolicy()
	if p == nil {
		out.Enabled = false
		return out
	}
	out.WebhookCIDRs, out.WebhookNamespaces, out.MetricsCIDRs, out.MetricsNamespaces = []string{}, []string{}, []string{}, []string{}
	for _, rule := range p.Spec.Ingress {
		cidrs, namespaces := &out.MetricsCIDRs, &out.MetricsNamespaces
		for _, port := range rule.Ports {
			if port.Port != nil && port.Port.String() == "https" {
				cidrs, namespaces = &out.WebhookCIDRs, &out.WebhookNamespaces
			}
		}
		for _, peer := range rule.From {
			switch {
			case peer.IPBlock != nil:
				*cidrs = append(*cidrs, peer.IPBlock.CIDR)
			case peer.NamespaceSelector != nil && len(peer.NamespaceSelector.MatchLabels) == 0 && len(peer.NamespaceSelector.MatchExpressions) == 0:
				*namespaces = append(*namespaces, deploy.AllNamespaces)
			case peer.NamespaceSelector != nil:
				for _, e := range peer.NamespaceSelector.MatchExpressions {
					*namespaces = append(*namespaces, e.Values...)
				}
			}
		}
	}
	return out
}
