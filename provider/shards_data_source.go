package provider

import (
	"context"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ datasource.DataSourceWithConfigure = &shardsDataSource{}

// NewShardsDataSource returns the depctrl_shards data source.
func NewShardsDataSource() datasource.DataSource {
	return &shardsDataSource{dataSourceType{name: "shards"}}
}

type shardsDataSource struct{ dataSourceType }

var shardObjectType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name":                  types.StringType,
	"base_url":              types.StringType,
	"external_url":          types.StringType,
	"virtual_workspace_url": types.StringType,
	"labels":                types.MapType{ElemType: types.StringType},
}}

type shardsDataSourceModel struct {
	ID     types.String `tfsdk:"id"`
	Shards types.List   `tfsdk:"shards"`
}

func (d *shardsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The shards of the kcp installation, from the Shard objects in `root`, sorted by name. " +
			"Use it to write one `depctrl_shard` per shard with `for_each`.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "Always `shards`."},
			"shards": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The shards.",
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"name":         schema.StringAttribute{Computed: true, MarkdownDescription: "The Shard object's name."},
						"base_url":     schema.StringAttribute{Computed: true, MarkdownDescription: "The URL at which the shard itself serves, for `depctrl_shard.url`."},
						"external_url": schema.StringAttribute{Computed: true, MarkdownDescription: "The URL clients use to reach workspaces on the shard, usually the front-proxy."},
						"virtual_workspace_url": schema.StringAttribute{Computed: true, MarkdownDescription: "The URL of the shard's virtual workspaces (`spec.virtualWorkspaceURL`, by default the shard's own address). " +
							"The dep-ctrl export's virtual workspace on the shard is at `<virtual_workspace_url>/services/apiexport/<dep-ctrl workspace cluster>/<export name>`: " +
							"the URL the export's endpoint slice lists for the shard once a workspace there binds the export, and that the runtime then connects to."},
						"labels": schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "The Shard object's labels, which workspace shard selectors match."},
					},
				},
			},
		},
	}
}

func (d *shardsDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	conn, ok := d.connection(&resp.Diagnostics)
	if !ok {
		return
	}
	kcp, ok := conn.kcpClient(&resp.Diagnostics)
	if !ok {
		return
	}
	list, err := kcp.Cluster(logicalcluster.NewPath("root")).CoreV1alpha1().Shards().List(ctx, metav1.ListOptions{})
	if err != nil {
		resp.Diagnostics.Append(explain(conn.Host(), "listing the shards in root", err))
		return
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	var shards []attr.Value
	for _, s := range items {
		obj, diags := types.ObjectValue(shardObjectType.AttrTypes, map[string]attr.Value{
			"name":                  types.StringValue(s.Name),
			"base_url":              types.StringValue(s.Spec.BaseURL),
			"external_url":          types.StringValue(s.Spec.ExternalURL),
			"virtual_workspace_url": types.StringValue(s.Spec.VirtualWorkspaceURL),
			"labels":                stringMap(s.Labels),
		})
		resp.Diagnostics.Append(diags...)
		shards = append(shards, obj)
	}
	l, diags := types.ListValue(shardObjectType, shards)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &shardsDataSourceModel{ID: types.StringValue("shards"), Shards: l})...)
}
