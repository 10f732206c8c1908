package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

var _ datasource.DataSourceWithConfigure = &runtimeManifestsDataSource{}

// NewRuntimeManifestsDataSource returns the depctrl_runtime_manifests data source.
func NewRuntimeManifestsDataSource() datasource.DataSource {
	return &runtimeManifestsDataSource{dataSourceType{name: "runtime_manifests"}}
}

// runtimeManifestsDataSource only learns the provider version, the default
// image tag, from the connection: it renders without connecting anywhere.
type runtimeManifestsDataSource struct{ dataSourceType }

// manifestsWebhookModel is depctrl_runtime_manifests' webhook block: the
// TLS material is given, not generated.
type manifestsWebhookModel struct {
	componentModel
	webhookSettings
	CACertificate  types.String `tfsdk:"ca_certificate"`
	TLSCertificate types.String `tfsdk:"tls_certificate"`
	TLSPrivateKey  types.String `tfsdk:"tls_private_key"`
}

type runtimeManifestsModel struct {
	runtimeSettings
	Controller    *componentModel        `tfsdk:"controller"`
	Webhook       *manifestsWebhookModel `tfsdk:"webhook"`
	NetworkPolicy types.Object           `tfsdk:"network_policy"`
	WebhookURL    types.String           `tfsdk:"webhook_url"`
	YAML          types.String           `tfsdk:"yaml"`
	Manifests     types.Map              `tfsdk:"manifests"`
}

// manifestsKubeconfigPathDoc is kubeconfig_path's description without the
// write-only attribute a data source cannot have.
var manifestsKubeconfigPathDoc = strings.Replace(runtimeDocs["kubeconfig_path"], "Exactly one of `kubeconfig_path`, `kubeconfig_wo` and `kubeconfig`", "Exactly one of `kubeconfig_path` and `kubeconfig`", 1)

func withDescription(a schema.StringAttribute, doc string) schema.StringAttribute {
	a.MarkdownDescription = doc
	return a
}

func manifestsComponentAttributes(component string) map[string]schema.Attribute {
	str := func(name string, sensitive bool, v ...validator.String) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Sensitive: sensitive, MarkdownDescription: runtimeDocs[name], Validators: v}
	}
	return map[string]schema.Attribute{
		"kubeconfig_path": withDescription(str("kubeconfig_path", false, stringvalidator.ExactlyOneOf(
			path.MatchRoot(component).AtName("kubeconfig_path"), path.MatchRoot(component).AtName("kubeconfig"))), manifestsKubeconfigPathDoc),
		"kubeconfig": withDescription(str("kubeconfig", true), "The kubeconfig content instead of `kubeconfig_path`. Sensitive; "+
			"a data source's inputs are stored in state (write-only attributes exist for resources only): prefer `kubeconfig_path`."),
		"context":        str("context", false),
		"replicas":       schema.Int64Attribute{Optional: true, MarkdownDescription: runtimeDocs["replicas"]},
		"extra_args":     schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: runtimeDocs["extra_args"]},
		"cpu_request":    str("cpu_request", false, quantityValidator()),
		"memory_request": str("memory_request", false, quantityValidator()),
		"cpu_limit":      str("cpu_limit", false, quantityValidator()),
		"memory_limit":   str("memory_limit", false, quantityValidator()),
	}
}

// manifestsNetworkPolicySchema is network_policy as in depctrl_runtime;
// a data source has no schema defaults, so inputs applies them.
func manifestsNetworkPolicySchema() schema.SingleNestedAttribute {
	list := func(name string, v validator.String) schema.ListAttribute {
		return schema.ListAttribute{
			Optional: true, ElementType: types.StringType, MarkdownDescription: networkPolicyDocs[name],
			Validators: []validator.List{listvalidator.ValueStringsAre(v)},
		}
	}
	namespaces := stringvalidator.RegexMatches(namespacePeerRE, `must be a namespace name or "*" (every namespace)`)
	return schema.SingleNestedAttribute{
		Optional: true, MarkdownDescription: networkPolicyDocs["network_policy"],
		Attributes: map[string]schema.Attribute{
			"enabled":            schema.BoolAttribute{Optional: true, MarkdownDescription: networkPolicyDocs["enabled"]},
			"webhook_cidrs":      list("webhook_cidrs", cidrValidator()),
			"webhook_namespaces": list("webhook_namespaces", namespaces),
			"metrics_cidrs":      list("metrics_cidrs", cidrValidator()),
			"metrics_namespaces": list("metrics_namespaces", namespaces),
		},
	}
}

func (d *runtimeManifestsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	opt := func(name string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, MarkdownDescription: runtimeDocs[name]}
	}
	webhook := manifestsComponentAttributes("webhook")
	webhook["port"] = schema.Int64Attribute{Optional: true, MarkdownDescription: runtimeDocs["port"]}
	webhook["url"] = opt("url")
	webhook["skip_protection_groups"] = schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: runtimeDocs["skip_protection_groups"]}
	webhook["deferred_deletion"] = schema.BoolAttribute{Optional: true, MarkdownDescription: runtimeDocs["deferred_deletion"]}
	webhook["tls_secret_name"] = schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "An existing `kubernetes.io/tls` Secret to serve with; then `ca_certificate` must be its CA. " +
			"Exactly one of `tls_secret_name` and `tls_certificate` is required.",
		Validators: []validator.String{stringvalidator.ExactlyOneOf(path.MatchRoot("webhook").AtName("tls_secret_name"), path.MatchRoot("webhook").AtName("tls_certificate"))},
	}
	webhook["ca_certificate"] = schema.StringAttribute{Required: true, MarkdownDescription: "The PEM CA that signed the serving certificate; the controller hands it to kcp."}
	webhook["tls_certificate"] = schema.StringAttribute{Optional: true, MarkdownDescription: "The PEM serving certificate, for example from the `tls` provider. It must cover the webhook's Service names or `url`."}
	webhook["tls_private_key"] = schema.StringAttribute{Optional: true, Sensitive: true, MarkdownDescription: "The PEM private key of `tls_certificate`."}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Renders the Kubernetes objects of the runtime as YAML, exactly as `depctrl_runtime` would apply them, for teams that deploy with GitOps. " +
			"The certificate is an input here (a data source is read on every plan, so it cannot keep a generated key): " +
			"bring it from the `tls` provider, cert-manager (`tls_secret_name`) or your PKI. The output holds the kubeconfigs and the key, so it is sensitive.",
		Attributes: map[string]schema.Attribute{
			"namespace":         opt("namespace"),
			"create_namespace":  schema.BoolAttribute{Optional: true, MarkdownDescription: "Whether to render the Namespace. Default `true`."},
			"name":              opt("name"),
			"image":             opt("image"),
			"image_tag":         opt("image_tag"),
			"image_pull_policy": opt("image_pull_policy"),
			"api_export_name":   opt("api_export_name"),
			"workspace_path":    opt("workspace_path"),
			"settle_objects":    schema.BoolAttribute{Optional: true, MarkdownDescription: runtimeDocs["settle_objects"]},
			"controller": schema.SingleNestedAttribute{
				Required: true, MarkdownDescription: "The controller, as in `depctrl_runtime`.",
				Attributes: manifestsComponentAttributes("controller"),
			},
			"webhook": schema.SingleNestedAttribute{
				Required: true, MarkdownDescription: "The webhook, as in `depctrl_runtime`, with its certificate.",
				Attributes: webhook,
			},
			"network_policy": manifestsNetworkPolicySchema(),
			"webhook_url":    schema.StringAttribute{Computed: true, MarkdownDescription: "The URL kcp calls the webhook at."},
			"yaml":           schema.StringAttribute{Computed: true, Sensitive: true, MarkdownDescription: "All objects as one multi-document YAML stream, in the order to apply them."},
			"manifests": schema.MapAttribute{
				Computed: true, Sensitive: true, ElementType: types.StringType,
				MarkdownDescription: "Each object as YAML, keyed by `Kind/name`, for tools that want one file per object.",
			},
		},
	}
}

func (d *runtimeManifestsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	m, ok := getModel[runtimeManifestsModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	in := m.inputs(d.conn.versionTag())
	cfg, diags := in.deployConfig(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	cfg.TLS = deploy.TLS{
		SecretName: m.Webhook.TLSSecretName.ValueString(),
		CACert:     []byte(m.Webhook.CACertificate.ValueString()),
		Cert:       []byte(m.Webhook.TLSCertificate.ValueString()),
		Key:        []byte(m.Webhook.TLSPrivateKey.ValueString()),
	}
	objs, err := deploy.Render(cfg)
	if err != nil {
		resp.Diagnostics.Append(renderError(err))
		return
	}
	all, err := deploy.YAML(objs)
	if err != nil {
		resp.Diagnostics.AddError("Cannot render the runtime", err.Error())
		return
	}
	manifests := make(map[string]attr.Value, len(objs))
	for _, o := range objs {
		one, err := deploy.YAML([]*unstructured.Unstructured{o})
		if err != nil {
			resp.Diagnostics.AddError("Cannot render the runtime", err.Error())
			return
		}
		manifests[objectKey(o)] = types.StringValue(string(one))
	}
	m.WebhookURL = types.StringValue(cfg.EffectiveWebhookURL())
	m.YAML = types.StringValue(string(all))
	m.Manifests = types.MapValueMust(types.StringType, manifests)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// inputs applies the defaults the resource's schema would, so both render
// the same objects from the same configuration.
func (m *runtimeManifestsModel) inputs(version string) *runtimeInputs {
	str := func(v types.String, def string) types.String {
		if v.IsNull() {
			return types.StringValue(def)
		}
		return v
	}
	defaults := func(c *componentModel) *componentModel {
		out := *c
		if out.Replicas.IsNull() {
			out.Replicas = types.Int64Value(deploy.DefaultReplicas)
		}
		out.CPURequest = str(out.CPURequest, defaultCPURequest)
		out.MemoryRequest = str(out.MemoryRequest, defaultMemoryRequest)
		out.MemoryLimit = str(out.MemoryLimit, defaultMemoryLimit)
		return &out
	}
	hook := m.Webhook.webhookSettings
	if hook.Port.IsNull() {
		hook.Port = types.Int64Value(deploy.DefaultWebhookPort)
	}
	createNS := m.CreateNamespace
	if createNS.IsNull() {
		createNS = types.BoolValue(true)
	}
	return &runtimeInputs{
		runtimeSettings: runtimeSettings{
			Namespace:       str(m.Namespace, deploy.DefaultNamespace),
			CreateNamespace: createNS,
			Name:            str(m.Name, deploy.DefaultName),
			Image:           str(m.Image, deploy.DefaultImage),
			ImageTag:        str(m.ImageTag, version),
			ImagePullPolicy: str(m.ImagePullPolicy, deploy.DefaultPullPolicy),
			APIExportName:   str(m.APIExportName, v1alpha1.DefaultAPIExportName),
			WorkspacePath:   m.WorkspacePath,
			SettleObjects:   types.BoolValue(m.SettleObjects.IsNull() || m.SettleObjects.ValueBool()),
		},
		NetworkPolicy: m.NetworkPolicy,
		Controller:    &runtimeComponentModel{componentModel: *defaults(m.Controller)},
		Webhook: &webhookModel{
			runtimeComponentModel: runtimeComponentModel{componentModel: *defaults(&m.Webhook.componentModel)},
			webhookSettings:       hook,
		},
	}
}
