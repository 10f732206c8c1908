package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// resourceType is embedded by every resource and list resource (both take
// the resource package's Metadata and Configure requests): Metadata names
// the type depctrl_<name>, and Configure keeps the provider's Connection,
// nil until the provider is configured.
type resourceType struct {
	name string
	// mutableIdentity: the identity may change over the resource's life.
	mutableIdentity bool
	conn            *Connection
}

func (t *resourceType) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + t.name
	resp.ResourceBehavior.MutableIdentity = t.mutableIdentity
}

func (t *resourceType) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	t.conn = connectionFrom(req.ProviderData, &resp.Diagnostics)
}

// identifiedResource is what every resource implements besides its own
// extras: Configure (resourceType), an identity, and import by ID or by
// identity. The framework finds each by type assertion, so these
// compile-time checks keep a mistyped method from silently dropping one.
type identifiedResource interface {
	resource.ResourceWithConfigure
	resource.ResourceWithIdentity
	resource.ResourceWithImportState
}

// dataSourceType is resourceType for data sources, whose Metadata and
// Configure take the datasource package's types.
type dataSourceType struct {
	name string
	conn *Connection
}

func (t *dataSourceType) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + t.name
}

func (t *dataSourceType) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	t.conn = connectionFrom(req.ProviderData, &resp.Diagnostics)
}

// connection is the Connection for a Read. Like getModel's, ok is false
// when diags holds an error, this one (the provider was not configured)
// or an earlier one, so that a Read can check once after both.
func (t *dataSourceType) connection(diags *diag.Diagnostics) (conn *Connection, ok bool) {
	if t.conn == nil {
		diags.AddError("Provider not configured", fmt.Sprintf("the depctrl provider was not configured before reading depctrl_%s", t.name))
	}
	return t.conn, !diags.HasError()
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
