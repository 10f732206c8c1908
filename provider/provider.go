// Package provider is the depctrl Terraform provider: it stands up the kcp
// topology that protects objects from deletion while others reference them.
package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/client-go/rest"
)

var _ provider.Provider = &depctrlProvider{}

// New returns the provider factory for a provider binary of version.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &depctrlProvider{version: version} }
}

type depctrlProvider struct {
	version string
}

type providerModel struct {
	connectionModel
	ShardCredentials types.Map        `tfsdk:"shard_credentials"`
	Kubernetes       *connectionModel `tfsdk:"kubernetes"`
}

// connectionModel is the set of attributes that say how to reach a cluster:
// kcp at the top of the provider block, and the cluster the runtime runs in
// inside its kubernetes block.
type connectionModel struct {
	KubeconfigPath     types.String `tfsdk:"kubeconfig_path"`
	KubeconfigRaw      types.String `tfsdk:"kubeconfig_raw"`
	Context            types.String `tfsdk:"context"`
	Host               types.String `tfsdk:"host"`
	Token              types.String `tfsdk:"token"`
	ClientCertificate  types.String `tfsdk:"client_certificate"`
	ClientKey          types.String `tfsdk:"client_key"`
	ClusterCA          types.String `tfsdk:"cluster_ca_certificate"`
	InsecureSkipVerify types.Bool   `tfsdk:"insecure_skip_tls_verify"`
}

func (p *depctrlProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "depctrl"
	resp.Version = p.version
}

func (p *depctrlProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The depctrl provider stands up a kcp topology that protects objects from being deleted while other objects still reference them. " +
			"It connects to kcp through the front-proxy, with a kubeconfig or with `host` and credentials. " +
			"It never falls back to `KUBECONFIG`, in-cluster configuration or localhost: when nothing points at kcp, it fails and says what to set.",
		Attributes: withShardCredentials(connectionAttributes(kcpTarget, "the kcp front-proxy", "https://kcp.example.com:6443")),
		Blocks: map[string]schema.Block{
			"kubernetes": schema.SingleNestedBlock{
				MarkdownDescription: "The Kubernetes cluster `depctrl_runtime` deploys the runtime into (in a real installation, the cluster that hosts kcp). " +
					"Only `depctrl_runtime` uses it; when it is missing, that resource fails and says what to set. " +
					"The provider never falls back to `KUBECONFIG` or in-cluster configuration here either.",
				Attributes: connectionAttributes(kubeTarget, "the Kubernetes API server", "https://k8s.example.com:6443"),
			},
		},
	}
}

// connectionAttributes describes one set of connection attributes; t names
// the environment variables that stand in for them.
func connectionAttributes(t *connectionTarget, what, exampleURL string) map[string]schema.Attribute {
	env := t.env
	host := "The https URL of " + what + ", such as `" + exampleURL + "`. "
	if t.workspaces {
		host += "A `/clusters/...` suffix is ignored. "
	}
	kubeconfig := "Path to a kubeconfig for " + what + ". "
	if t.workspaces {
		kubeconfig += "Its server may name a workspace (`/clusters/root`); the provider addresses each workspace itself. "
	}
	return map[string]schema.Attribute{
		"kubeconfig_path": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: kubeconfig + "Defaults to the `" + env[0] + "` environment variable. Conflicts with `kubeconfig_raw` and `host`.",
		},
		"kubeconfig_raw": schema.StringAttribute{
			Optional:            true,
			Sensitive:           true,
			MarkdownDescription: "The content of a kubeconfig for " + what + ", as an alternative to `kubeconfig_path`. Conflicts with `kubeconfig_path` and `host`.",
		},
		"context": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "The kubeconfig context to use. Defaults to the `" + env[1] + "` environment variable, then the kubeconfig's current context.",
		},
		"host": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: host + "Requires `token` or `client_certificate` and `client_key`. Defaults to the `" + env[2] + "` environment variable.",
		},
		"token": schema.StringAttribute{
			Optional:            true,
			Sensitive:           true,
			MarkdownDescription: "A bearer token for `host`. Defaults to the `" + env[3] + "` environment variable.",
		},
		"client_certificate": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "A PEM client certificate for `host`; requires `client_key`. Defaults to the `" + env[4] + "` environment variable.",
		},
		"client_key": schema.StringAttribute{
			Optional:            true,
			Sensitive:           true,
			MarkdownDescription: "The PEM private key of `client_certificate`. Defaults to the `" + env[5] + "` environment variable.",
		},
		"cluster_ca_certificate": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "The PEM CA that signed the serving certificate of " + what + ", for `host`. Defaults to the `" + env[6] + "` environment variable, then the system roots.",
		},
		"insecure_skip_tls_verify": schema.BoolAttribute{
			Optional:            true,
			MarkdownDescription: "Skip verifying the serving certificate of " + what + ". Only for throw-away test installations. Defaults to the `" + env[7] + "` environment variable, then `false`.",
		},
	}
}

func (p *depctrlProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	m, ok := getModel[providerModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	kube := m.Kubernetes
	if kube == nil {
		kube = &connectionModel{}
	}
	shards, shardsUnknown := m.shardCredentials(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.unknown() || kube.unknown() || shardsUnknown {
		if req.ClientCapabilities.DeferralAllowed {
			resp.Deferred = &provider.Deferred{Reason: provider.DeferredReasonProviderConfigUnknown}
			return
		}
		conn := &Connection{err: errConfigUnknown, kubeErr: errConfigUnknown, version: p.version}
		resp.DataSourceData, resp.ResourceData, resp.ListResourceData = conn, conn, conn
		return
	}
	conn := &Connection{version: p.version, shards: shards}
	conn.base, conn.err = m.restConfig(kcpTarget, p.version, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	// A missing or broken kubernetes block only matters to depctrl_runtime:
	// keep the error for it instead of failing every plan.
	conn.kube, conn.kubeErr = kube.restConfig(kubeTarget, p.version, nil)
	tflog.Debug(ctx, "configured connections", map[string]interface{}{"kcp": conn.Host(), "kubernetes": conn.KubeHost()})
	resp.DataSourceData, resp.ResourceData, resp.ListResourceData = conn, conn, conn
}

func (m *connectionModel) unknown() bool {
	return anyUnknown(m.KubeconfigPath, m.KubeconfigRaw, m.Context, m.Host, m.Token, m.ClientCertificate, m.ClientKey, m.ClusterCA) || m.InsecureSkipVerify.IsUnknown()
}

// restConfig resolves the settings of one connection. With diags, a
// problem becomes an attribute error there; without, it is returned.
func (m *connectionModel) restConfig(t *connectionTarget, version string, diags *diag.Diagnostics) (*rest.Config, error) {
	settings, err := ConnectionSettings{
		KubeconfigPath:     m.KubeconfigPath.ValueString(),
		KubeconfigRaw:      m.KubeconfigRaw.ValueString(),
		Context:            m.Context.ValueString(),
		Host:               m.Host.ValueString(),
		Token:              m.Token.ValueString(),
		ClientCertificate:  m.ClientCertificate.ValueString(),
		ClientKey:          m.ClientKey.ValueString(),
		ClusterCA:          m.ClusterCA.ValueString(),
		InsecureSkipVerify: m.InsecureSkipVerify.ValueBool(),
		target:             t,
	}.withEnvironment(lookupEnv)
	if err != nil {
		if diags != nil {
			diags.AddError("Invalid provider environment", err.Error())
		}
		return nil, err
	}
	cfg, err := settings.restConfig()
	if err != nil {
		if diags != nil {
			if se, ok := err.(*settingError); ok && se.Attribute != "" {
				diags.AddAttributeError(attributePath(se.Attribute), se.Summary, se.Detail)
			} else {
				diags.AddError("No "+t.label+" connection configured", t.nothing)
			}
		}
		return nil, err
	}
	cfg.UserAgent = fmt.Sprintf("%s/%s", userAgent, version)
	return cfg, nil
}

func (p *depctrlProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewWorkspaceResource, NewExportResource, NewProviderBindingResource, NewRootRBACResource, NewShardResource, NewDependencyRuleResource, NewRuntimeResource, NewObjectResource}
}

// ListResources are what `terraform query` lists (Terraform 1.14 and later):
// each result carries its resource's identity, so that
// -generate-config-out writes import blocks for an existing installation.
func (p *depctrlProvider) ListResources(context.Context) []func() list.ListResource {
	return []func() list.ListResource{NewWorkspaceListResource, NewDependencyRuleListResource, NewShardListResource}
}

func (p *depctrlProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewWorkspaceDataSource, NewShardsDataSource, NewDependencyRulesDataSource, NewRuntimeManifestsDataSource, NewReferencesDataSource}
}

type unknowable interface{ IsUnknown() bool }

func anyUnknown(vals ...unknowable) bool {
	for _, v := range vals {
		if v.IsUnknown() {
			return true
		}
	}
	return false
}
