package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/internal/blockers"
)

var _ datasource.DataSourceWithConfigure = &referencesDataSource{}

// NewReferencesDataSource returns the depctrl_references data source.
func NewReferencesDataSource() datasource.DataSource {
	return &referencesDataSource{dataSourceType{name: "references"}}
}

type referencesDataSource struct{ dataSourceType }

var dependentType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"workspace":     types.StringType,
	"group":         types.StringType,
	"version":       types.StringType,
	"resource":      types.StringType,
	"kind":          types.StringType,
	"namespace":     types.StringType,
	"name":          types.StringType,
	"generate_name": types.StringType,
	"pending":       types.BoolType,
}}

type referencesModel struct {
	ID            types.String `tfsdk:"id"`
	WorkspacePath types.String `tfsdk:"workspace_path"`
	Group         types.String `tfsdk:"group"`
	Version       types.String `tfsdk:"version"`
	Resource      types.String `tfsdk:"resource"`
	Namespace     types.String `tfsdk:"namespace"`
	Name          types.String `tfsdk:"name"`
	Referenced    types.Bool   `tfsdk:"referenced"`
	Message       types.String `tfsdk:"message"`
	Dependents    types.List   `tfsdk:"dependents"`
	More          types.Int64  `tfsdk:"more"`
}

func (d *referencesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	computed := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The dependents that reference an object now, as deletion protection decides them: the data source deletes the object " +
			"as a dry run, which changes nothing and which the deletion webhook decides as it would the deletion, and reads the dependents " +
			"its denial lists (up to 1000): stored ones, and those whose write is admitted but not stored yet. Use it in a `precondition` " +
			"before removing an object, or to show what still holds one. The provider's credentials must allow deleting the object.",
		Attributes: map[string]schema.Attribute{
			"id":             computed("`<workspace_path>/<resource>.<group>/<namespace>/<name>`, without the namespace for a cluster-scoped object."),
			"workspace_path": schema.StringAttribute{Required: true, MarkdownDescription: "The workspace the object is in, such as `root:team-a`.", Validators: []validator.String{workspacePathValidator()}},
			"group":          schema.StringAttribute{Required: true, MarkdownDescription: "The object's API group, such as `network.example.io` (protected types are served by APIExports, so never the core group).", Validators: []validator.String{objectNameValidator("must be an API group (a DNS subdomain)")}},
			"version":        schema.StringAttribute{Required: true, MarkdownDescription: "The API version, such as `v1`.", Validators: []validator.String{dnsLabelValidator("must be an API version (a DNS label)")}},
			"resource":       schema.StringAttribute{Required: true, MarkdownDescription: "The plural resource, such as `vpcs`.", Validators: []validator.String{dnsLabelValidator("must be a plural resource name (a DNS label)")}},
			"namespace": schema.StringAttribute{Optional: true, MarkdownDescription: "The object's namespace; leave it out for a cluster-scoped object.",
				Validators: []validator.String{dnsLabelValidator("must be a namespace name (a DNS label)")}},
			"name":       schema.StringAttribute{Required: true, MarkdownDescription: "The object's name.", Validators: []validator.String{objectNameValidator("must be an object name (a DNS subdomain)")}},
			"referenced": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether dependents reference the object, so that its deletion would be refused now."},
			"message":    computed("The denial's message, for people; empty when nothing references the object."),
			"more": schema.Int64Attribute{Computed: true, MarkdownDescription: "How many more dependents reference the object than `dependents` lists " +
				"(past 1 000), -1 for an unknown number; 0 when it lists them all."},
			"dependents": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The dependents, sorted by kind, namespace and name.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"workspace":     computed("The logical cluster the dependent is in (the object's)."),
					"group":         computed("The dependent's API group."),
					"version":       computed("The API version its rule reads it in."),
					"resource":      computed("The dependent's plural resource."),
					"kind":          computed("The dependent's kind."),
					"namespace":     computed("The dependent's namespace; empty when it is cluster-scoped."),
					"name":          computed("The dependent's name; empty for one being created with a generated name."),
					"generate_name": computed("The name prefix of a dependent being created with a generated name."),
					"pending":       schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the dependent's write is admitted and not stored yet."},
				}},
			},
		},
	}
}

func (d *referencesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	m, _ := getModel[referencesModel](ctx, req.Config, &resp.Diagnostics)
	conn, ok := d.connection(&resp.Diagnostics)
	if !ok {
		return
	}
	ws := m.WorkspacePath.ValueString()
	client, ok := conn.dynamicIn(ws, &resp.Diagnostics)
	if !ok {
		return
	}
	gvr := k8sschema.GroupVersionResource{Group: m.Group.ValueString(), Version: m.Version.ValueString(), Resource: m.Resource.ValueString()}
	namespace, name := m.Namespace.ValueString(), m.Name.ValueString()
	what := referencesID(ws, gvr, namespace, name)
	v, err := blockers.Ask(ctx, client.Resource(gvr).Namespace(namespace), name)
	if err != nil {
		resp.Diagnostics.Append(explainIn(ctx, conn, ws, "asking deletion protection what references "+what, err))
		return
	}
	var dependents []attr.Value
	for _, b := range v.Blockers {
		obj, diags := types.ObjectValue(dependentType.AttrTypes, map[string]attr.Value{
			"workspace":     types.StringValue(b.Workspace),
			"group":         types.StringValue(b.Group),
			"version":       types.StringValue(b.Version),
			"resource":      types.StringValue(b.Resource),
			"kind":          types.StringValue(b.Kind),
			"namespace":     types.StringValue(b.Namespace),
			"name":          types.StringValue(b.Name),
			"generate_name": types.StringValue(b.GenerateName),
			"pending":       types.BoolValue(b.Pending),
		})
		resp.Diagnostics.Append(diags...)
		dependents = append(dependents, obj)
	}
	list, diags := types.ListValue(dependentType, dependents)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.ID = types.StringValue(what)
	m.Referenced = types.BoolValue(!v.Deletable)
	m.Message = types.StringValue(v.Message)
	m.Dependents = list
	m.More = types.Int64Value(int64(v.More))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// referencesID names the object asked about.
func referencesID(ws string, gvr k8sschema.GroupVersionResource, namespace, name string) string {
	parts := []string{ws, gvr.GroupResource().String()}
	if namespace != "" {
		parts = append(parts, namespace)
	}
	return fmt.Sprintf("%s/%s", strings.Join(parts, "/"), name)
}
