package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/client-go/rest"
)

// shardCredentials is one way to authenticate to a shard directly: the
// credential attributes of a depctrl_shard, or an entry of the provider
// block's shard_credentials. Paths are read when a client is built, so a
// rotated file is picked up by the next run.
type shardCredentials struct {
	KubeconfigPath string
	KubeconfigRaw  string
	Context        string
	Token          string
	CertPath       string
	KeyPath        string
	Cert           string
	Key            string
	CA             string
	// from names where the credentials were configured, for errors.
	from string
}

// none reports whether nothing that authenticates is set.
func (c shardCredentials) none() bool {
	return c.KubeconfigPath == "" && c.KubeconfigRaw == "" && c.Token == "" && c.CertPath == "" && c.Cert == ""
}

// restConfig builds the client configuration the credentials describe. Its
// Host is the kubeconfig's server, or empty.
func (c shardCredentials) restConfig() (*rest.Config, error) {
	if c.KubeconfigPath != "" || c.KubeconfigRaw != "" {
		// fromKubeconfig expands a leading ~/ itself.
		cfg, err := ConnectionSettings{KubeconfigPath: c.KubeconfigPath, KubeconfigRaw: c.KubeconfigRaw, Context: c.Context}.fromKubeconfig()
		if err != nil {
			return nil, fmt.Errorf("the kubeconfig of %s: %w", c.from, err)
		}
		return cfg, nil
	}
	cert, key := []byte(c.Cert), []byte(c.Key)
	if c.CertPath != "" {
		var err error
		if cert, err = readFile(c.CertPath); err != nil {
			return nil, err
		}
		if key, err = readFile(c.KeyPath); err != nil {
			return nil, err
		}
	}
	return &rest.Config{BearerToken: c.Token, TLSClientConfig: rest.TLSClientConfig{CertData: cert, KeyData: key, CAData: []byte(c.CA)}}, nil
}

// shardCredentialsModel is one entry of the provider block's
// shard_credentials.
type shardCredentialsModel struct {
	KubeconfigPath    types.String `tfsdk:"kubeconfig_path"`
	KubeconfigRaw     types.String `tfsdk:"kubeconfig_raw"`
	Context           types.String `tfsdk:"context"`
	Token             types.String `tfsdk:"token"`
	ClientCertificate types.String `tfsdk:"client_certificate"`
	ClientKey         types.String `tfsdk:"client_key"`
	ClusterCA         types.String `tfsdk:"cluster_ca_certificate"`
}

func (m shardCredentialsModel) unknown() bool {
	return anyUnknown(m.KubeconfigPath, m.KubeconfigRaw, m.Context, m.Token, m.ClientCertificate, m.ClientKey, m.ClusterCA)
}

// credentials are the entry for the shard named shard.
func (m shardCredentialsModel) credentials(shard string) shardCredentials {
	return shardCredentials{
		KubeconfigPath: m.KubeconfigPath.ValueString(), KubeconfigRaw: m.KubeconfigRaw.ValueString(), Context: m.Context.ValueString(),
		Token: m.Token.ValueString(), Cert: m.ClientCertificate.ValueString(), Key: m.ClientKey.ValueString(), CA: m.ClusterCA.ValueString(),
		from: fmt.Sprintf("the provider's shard_credentials[%q]", shard),
	}
}

// shardCredentialsAttribute is the provider block's shard_credentials: the
// credentials of depctrl_shard resources that set none of their own. The
// provider configuration is never stored in state and may take ephemeral
// values, which is why shard keys belong here rather than in a resource:
// a write-only resource attribute would be gone when the grant is
// refreshed or destroyed.
func shardCredentialsAttribute() schema.MapNestedAttribute {
	sibling := func(name string) path.Expression { return path.MatchRelative().AtParent().AtName(name) }
	return schema.MapNestedAttribute{
		Optional: true,
		MarkdownDescription: "Credentials for each shard, by Shard name, for `depctrl_shard` resources that set no credentials of their own. " +
			"Unlike a resource's attributes these are never stored in state, and may come from ephemeral values (an ephemeral variable or a " +
			"secrets manager's ephemeral resource): use them for inline keys. Each entry holds a kubeconfig (`kubeconfig_path` or " +
			"`kubeconfig_raw`, with `context`), or `client_certificate` and `client_key`, or `token`; the URL is the resource's `url`, " +
			"else the kubeconfig's server, else the Shard object's base URL.",
		Validators: []validator.Map{mapvalidator.KeysAre(objectNameValidator("must be a Shard object name such as shard-1"))},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"kubeconfig_path": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Path to a kubeconfig for the shard that may manage RBAC in `system:admin`; a `/clusters/...` suffix on its server is ignored.",
				Validators:          []validator.String{stringvalidator.ConflictsWith(sibling("kubeconfig_raw"), sibling("client_certificate"), sibling("token"))},
			},
			"kubeconfig_raw": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "The content of such a kubeconfig, as an alternative to `kubeconfig_path`.",
				Validators:          []validator.String{stringvalidator.ConflictsWith(sibling("client_certificate"), sibling("token"))},
			},
			"context": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "The context of the kubeconfig to use, such as the `system:masters` one of a shard's admin kubeconfig; default its current context.",
			},
			"token": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "A bearer token for the shard.",
				Validators:          []validator.String{stringvalidator.ConflictsWith(sibling("client_certificate"))},
			},
			"client_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "A PEM client certificate for the shard; requires `client_key`.",
				Validators:          []validator.String{stringvalidator.AlsoRequires(sibling("client_key"))},
			},
			"client_key": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "The PEM private key of `client_certificate`.",
				Validators:          []validator.String{stringvalidator.AlsoRequires(sibling("client_certificate"))},
			},
			"cluster_ca_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "The PEM CA that signed the shard's serving certificate, with `client_certificate` or `token`; a kubeconfig names its own.",
				Validators:          []validator.String{stringvalidator.ConflictsWith(sibling("kubeconfig_path"), sibling("kubeconfig_raw"))},
			},
		}},
	}
}

func withShardCredentials(attrs map[string]schema.Attribute) map[string]schema.Attribute {
	attrs["shard_credentials"] = shardCredentialsAttribute()
	return attrs
}

// shardCredentials reads the provider block's shard_credentials; unknown
// is true while any of it depends on values known only after apply.
func (m *providerModel) shardCredentials(ctx context.Context, diags *diag.Diagnostics) (creds map[string]shardCredentials, unknown bool) {
	if m.ShardCredentials.IsNull() {
		return nil, false
	}
	if m.ShardCredentials.IsUnknown() {
		return nil, true
	}
	var entries map[string]shardCredentialsModel
	diags.Append(m.ShardCredentials.ElementsAs(ctx, &entries, false)...)
	creds = make(map[string]shardCredentials, len(entries))
	for name, e := range entries {
		if e.unknown() {
			unknown = true
			continue
		}
		c := e.credentials(name)
		if c.Context != "" && c.KubeconfigPath == "" && c.KubeconfigRaw == "" {
			diags.AddAttributeError(path.Root("shard_credentials").AtMapKey(name).AtName("context"), "Context without a kubeconfig",
				fmt.Sprintf("shard_credentials[%q].context names a context of a kubeconfig: set kubeconfig_path or kubeconfig_raw too", name))
			continue
		}
		if c.none() {
			diags.AddAttributeError(path.Root("shard_credentials").AtMapKey(name), "No shard credentials",
				fmt.Sprintf("shard_credentials[%q] sets nothing that authenticates: set kubeconfig_path or kubeconfig_raw, client_certificate and client_key, or token", name))
			continue
		}
		creds[name] = c
	}
	return creds, unknown
}

// credentials are the resource's own credential attributes, else the
// provider block's shard_credentials entry for the shard.
func (m *shardModel) credentials(conn *Connection) (shardCredentials, error) {
	own := shardCredentials{
		KubeconfigPath: m.KubeconfigPath.ValueString(), Context: m.Context.ValueString(),
		CertPath: m.ClientCertificatePath.ValueString(), KeyPath: m.ClientKeyPath.ValueString(),
		Cert: m.ClientCertificate.ValueString(), Key: m.ClientKey.ValueString(), CA: m.CACertificate.ValueString(),
		from: "this depctrl_shard",
	}
	if !own.none() {
		return own, nil
	}
	name := m.Name.ValueString()
	if c, ok := conn.shards[name]; ok {
		return c, nil
	}
	return shardCredentials{}, fmt.Errorf("no credentials for shard %q: set kubeconfig_path, client_certificate_path or client_certificate, "+
		"or give the provider block shard_credentials = { %q = { ... } }", name, name)
}

// shardConfig builds a client configuration that talks to the shard itself,
// scoped to system:admin. The URL comes from the url attribute, then the
// kubeconfig's server.
func (m *shardModel) shardConfig(conn *Connection) (*rest.Config, error) {
	creds, err := m.credentials(conn)
	if err != nil {
		return nil, err
	}
	cfg, err := creds.restConfig()
	if err != nil {
		return nil, err
	}
	if u := m.URL.ValueString(); u != "" {
		cfg.Host = u
	}
	if cfg.Host == "" {
		return nil, errNoShardURL
	}
	base, err := stripClustersPath(cfg.Host)
	if err != nil {
		return nil, err
	}
	cfg.Host = base + "/clusters/" + systemAdminCluster
	cfg.UserAgent = conn.userAgent()
	return cfg, nil
}
