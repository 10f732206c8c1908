package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

var _ datasource.DataSourceWithConfigure = &workspaceDataSource{}

// NewWorkspaceDataSource returns the depctrl_workspace data source.
func NewWorkspaceDataSource() datasource.DataSource {
	return &workspaceDataSource{dataSourceType{name: "workspace"}}
}

type workspaceDataSource struct{ dataSourceType }

type workspaceDataSourceModel struct {
	ID      types.String `tfsdk:"id"`
	Path    types.String `tfsdk:"path"`
	Name    types.String `tfsdk:"name"`
	Cluster types.String `tfsdk:"cluster"`
	Phase   types.String `tfsdk:"phase"`
	URL     types.String `tfsdk:"url"`
	Type    types.String `tfsdk:"type"`
	Shard   types.String `tfsdk:"shard"`
}

func (d *workspaceDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Looks up a kcp workspace by its path, such as `root:org:network`, and returns its logical cluster name, phase, URL, type and shard. " +
			"Use it to refer to workspaces that Terraform does not manage.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The workspace path.",
			},
			"path": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "The workspace path: `root`, or `root` followed by `:`-separated workspace names, such as `root:org:team`.",
				Validators:          []validator.String{workspacePathValidator()},
			},
			"name": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The workspace name, the last segment of `path`.",
			},
			"cluster": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The logical cluster name of the workspace, such as `2x7ab3c9d0e1f2g3h4`. `root` for the root workspace.",
			},
			"phase": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The workspace phase: `Scheduling`, `Initializing`, `Ready`, `Unavailable` or `Deleting`.",
			},
			"url": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The URL that addresses the workspace, for use as a kubeconfig server.",
			},
			"type": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The workspace type, as `path:name` of its WorkspaceType, such as `root:universal`.",
			},
			"shard": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The name of the shard that hosts the workspace.",
			},
		},
	}
}

func (d *workspaceDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	m, _ := getModel[workspaceDataSourceModel](ctx, req.Config, &resp.Diagnostics)
	conn, ok := d.connection(&resp.Diagnostics)
	if !ok {
		return
	}
	p := m.Path.ValueString()
	tflog.Debug(ctx, "reading workspace", map[string]interface{}{"path": p})
	info, err := readWorkspace(ctx, conn, p)
	var notFound *workspaceNotFoundError
	if errors.As(err, &notFound) {
		resp.Diagnostics.AddAttributeError(path.Root("path"), "Workspace not found", notFound.Error()+".")
		return
	}
	if err != nil {
		resp.Diagnostics.Append(explain(conn.Host(), fmt.Sprintf("reading workspace %q", p), err))
		return
	}
	m.ID = types.StringValue(info.Path)
	m.Name = types.StringValue(info.Name)
	m.Cluster = types.StringValue(info.Cluster)
	m.Phase = types.StringValue(info.Phase)
	m.URL = types.StringValue(info.URL)
	m.Type = types.StringValue(info.Type)
	m.Shard = types.StringValue(info.Shard)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
