package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
)

// ImportState takes the shard name and where its credentials are, since
// import cannot see the resource's configuration:
// <name>[/<grant name>],<kubeconfig path>[,context=<context>][,url=<url>] or
// <name>[/<grant name>],<client certificate path>,<client key path>[,ca=<CA file>][,url=<url>],
// or only <name>[/<grant name>][,url=<url>] when the provider block's
// shard_credentials has the shard.
// The identity says the same in its attributes (shardIdentity). Read then
// finds the grant's subjects and types on the shard. Inline credentials
// are not in an ID (the provider block's shard_credentials serve instead); apply adopts an existing grant too.
func (r *shardResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	var id shardImportID
	var err error
	if byIdentity(req) {
		ident, ok := getModel[shardIdentity](ctx, req.Identity, &resp.Diagnostics)
		if !ok {
			return
		}
		if id, err = shardImportIDFromIdentity(ident); err != nil {
			resp.Diagnostics.AddError("Invalid import identity", err.Error())
			return
		}
	} else if id, err = parseShardImportID(req.ID); err != nil {
		resp.Diagnostics.AddError("Invalid import ID", err.Error())
		return
	}
	setIdentity(ctx, resp.Identity, shardIdentityOf(types.StringValue(id.name), types.StringValue(id.grant)), &resp.Diagnostics)
	set := func(attr, v string) {
		if v != "" {
			resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(attr), v)...)
		}
	}
	set("id", id.name)
	set("name", id.name)
	set("grant_name", id.grant)
	set("kubeconfig_path", id.kubeconfig)
	set("context", id.context)
	set("client_certificate_path", id.cert)
	set("client_key_path", id.key)
	set("url", id.url)
	if id.ca != "" {
		ca, err := readFile(id.ca)
		if err != nil {
			resp.Diagnostics.AddError("Invalid import ID", fmt.Sprintf("the CA of %q: %v", req.ID, err))
			return
		}
		set("ca_certificate", string(ca))
	}
}

// shardImportID is a parsed depctrl_shard import ID.
type shardImportID struct {
	name, grant, kubeconfig, context, cert, key, ca, url string
}

func parseShardImportID(s string) (shardImportID, error) {
	bad := fmt.Errorf("%q is not <shard name>[/<grant name>],<kubeconfig path>[,context=<context>][,url=<url>], "+
		"<shard name>[/<grant name>],<client certificate path>,<client key path>[,ca=<CA file>][,url=<url>], "+
		"or <shard name>[/<grant name>][,url=<url>] with the shard's credentials in the provider block's shard_credentials", s)
	parts := strings.Split(s, ",")
	var id shardImportID
	var named bool
	id.name, id.grant, named = strings.Cut(parts[0], "/")
	if !validObjectName(id.name) || (named && id.grant == "") || (len(parts) > 1 && parts[1] == "") {
		return shardImportID{}, bad
	}
	if !named {
		id.grant = rbac.ShardReaderName
	}
	option := func(p string) bool {
		return strings.HasPrefix(p, "context=") || strings.HasPrefix(p, "ca=") || strings.HasPrefix(p, "url=")
	}
	rest := parts[1:]
	switch {
	case len(rest) == 0 || option(rest[0]):
		// The provider block's shard_credentials.
	case len(rest) > 1 && !option(rest[1]):
		id.cert, id.key, rest = rest[0], rest[1], rest[2:]
	default:
		id.kubeconfig, rest = rest[0], rest[1:]
	}
	for _, p := range rest {
		key, value, _ := strings.Cut(p, "=")
		var into *string
		switch {
		case key == "context" && id.kubeconfig != "":
			into = &id.context
		case key == "ca" && id.cert != "":
			into = &id.ca
		case key == "url":
			into = &id.url
		}
		if into == nil || *into != "" || value == "" {
			return shardImportID{}, bad
		}
		*into = value
	}
	return id, nil
}

// shardImportIDFromIdentity checks an import block's identity as
// parseShardImportID checks an import ID.
func shardImportIDFromIdentity(ident shardIdentity) (shardImportID, error) {
	id := shardImportID{
		name: ident.Name.ValueString(), grant: ident.GrantName.ValueString(),
		kubeconfig: ident.KubeconfigPath.ValueString(), context: ident.Context.ValueString(),
		cert: ident.ClientCertificatePath.ValueString(), key: ident.ClientKeyPath.ValueString(),
		ca: ident.CACertificatePath.ValueString(), url: ident.URL.ValueString(),
	}
	if id.grant == "" {
		id.grant = rbac.ShardReaderName
	}
	switch {
	case !validObjectName(id.name):
		return id, fmt.Errorf("name %q is not a Shard name such as shard-1", id.name)
	case id.kubeconfig != "" && id.cert != "":
		return id, fmt.Errorf("give at most one of kubeconfig_path and client_certificate_path: importing shard %q reads its grant on the shard, "+
			"with the credentials they name, or with the provider block's shard_credentials for the shard when neither is given "+
			"(an identity cannot carry inline credentials)", id.name)
	case (id.cert == "") != (id.key == ""):
		return id, fmt.Errorf("client_certificate_path and client_key_path go together")
	case id.context != "" && id.kubeconfig == "":
		return id, fmt.Errorf("context needs kubeconfig_path")
	case id.ca != "" && id.cert == "":
		return id, fmt.Errorf("ca_certificate_path goes with client_certificate_path; a kubeconfig names its own CA")
	}
	return id, nil
}
