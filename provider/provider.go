// Package provider is the depctrl Terraform provider: it stands up the kcp
// topology that protects objects from deletion while others reference them.
package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
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
		Attributes: map[string]schema.Attribute{
			"kubeconfig_path": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Path to a kubeconfig for the kcp front-proxy. Its server may name a workspace (`/clusters/root`); the provider addresses each workspace itself. " +
					"Defaults to the `" + EnvKubeconfig + "` environment variable. Conflicts with `kubeconfig_raw` and `host`.",
			},
			"kubeconfig_raw": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "The content of a kubeconfig for the kcp front-proxy, as an alternative to `kubeconfig_path`. Conflicts with `kubeconfig_path` and `host`.",
			},
			"context": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "The kubeconfig context to use. Defaults to the `" + EnvContext + "` environment variable, then the kubeconfig's current context.",
			},
			"host": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The https URL of the kcp front-proxy, such as `https://kcp.example.com:6443`. A `/clusters/...` suffix is ignored. " +
					"Requires `token` or `client_certificate` and `client_key`. Defaults to the `" + EnvHost + "` environment variable.",
			},
			"token": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "A bearer token for `host`. Defaults to the `" + EnvToken + "` environment variable.",
			},
			"client_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "A PEM client certificate for `host`; requires `client_key`. Defaults to the `" + EnvClientCert + "` environment variable.",
			},
			"client_key": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "The PEM private key of `client_certificate`. Defaults to the `" + EnvClientKey + "` environment variable.",
			},
			"cluster_ca_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "The PEM CA that signed the front-proxy's serving certificate, for `host`. Defaults to the `" + EnvClusterCA + "` environment variable, then the system roots.",
			},
			"insecure_skip_tls_verify": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Skip verifying the front-proxy's certificate. Only for throw-away test installations. Defaults to the `" + EnvInsecure + "` environment variable, then `false`.",
			},
		},
	}
}

func (p *depctrlProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if anyUnknown(m.KubeconfigPath, m.KubeconfigRaw, m.Context, m.Host, m.Token, m.ClientCertificate, m.ClientKey, m.ClusterCA) || m.InsecureSkipVerify.IsUnknown() {
		if req.ClientCapabilities.DeferralAllowed {
			resp.Deferred = &provider.Deferred{Reason: provider.DeferredReasonProviderConfigUnknown}
			return
		}
		conn := &Connection{err: errConfigUnknown}
		resp.DataSourceData, resp.ResourceData = conn, conn
		return
	}
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
	}.withEnvironment(lookupEnv)
	if err != nil {
		resp.Diagnostics.AddError("Invalid provider environment", err.Error())
		return
	}
	cfg, err := settings.restConfig()
	if err != nil {
		if se, ok := err.(*settingError); ok && se.Attribute != "" {
			resp.Diagnostics.AddAttributeError(path.Root(se.Attribute), se.Summary, se.Detail)
		} else {
			resp.Diagnostics.AddError("No kcp connection configured", nothingConfigured)
		}
		return
	}
	cfg.UserAgent = fmt.Sprintf("%s/%s", userAgent, p.version)
	tflog.Debug(ctx, "configured kcp connection", map[string]interface{}{"host": cfg.Host})
	conn := &Connection{base: cfg}
	resp.DataSourceData, resp.ResourceData = conn, conn
}

func (p *depctrlProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewWorkspaceResource, NewExportResource, NewProviderBindingResource, NewRootRBACResource, NewShardResource, NewDependencyRuleResource}
}

func (p *depctrlProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewWorkspaceDataSource, NewShardsDataSource, NewDependencyRulesDataSource}
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

// connectionFrom extracts the Connection that the provider's Configure
// stored, for a resource's or data source's Configure; nil before the
// provider is configured.
func connectionFrom(data any, diags *diag.Diagnostics) *Connection {
	if data == nil {
		return nil
	}
	c, ok := data.(*Connection)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("expected *provider.Connection, got %T", data))
		return nil
	}
	return c
}
