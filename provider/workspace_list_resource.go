package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

var _ list.ListResourceWithConfigure = &workspaceListResource{}

// NewWorkspaceListResource returns the depctrl_workspace list resource.
func NewWorkspaceListResource() list.ListResource {
	return &workspaceListResource{resourceType{name: "workspace"}}
}

// workspaceListResource lists the workspaces under a path, for
// `terraform query`.
type workspaceListResource struct{ resourceType }

func (l *workspaceListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The workspaces under `parent_path`, each with its path (the identity), logical cluster, shard and phase, " +
			"sorted by path; with `recursive`, their descendants too.",
		Attributes: map[string]schema.Attribute{
			"parent_path": schema.StringAttribute{Required: true, MarkdownDescription: "The workspace whose children are listed, such as `root` or `root:org`."},
			"recursive":   schema.BoolAttribute{Optional: true, MarkdownDescription: "Also list the descendants of every workspace listed. Default `false`."},
		},
	}
}

func (l *workspaceListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	tree, ok := l.workspaceTree(ctx, req, stream, "parent_path", "root:org")
	if !ok {
		return
	}
	stream.Results = func(push func(list.ListResult) bool) {
		var n int64
		tree.walk(ctx, req, push, func(p string, ws *tenancyv1alpha1.Workspace) bool {
			n++
			return push(workspaceResult(ctx, req, p, ws)) && (req.Limit <= 0 || n < req.Limit)
		})
	}
}

// workspaceResult is one workspace as a list result.
func workspaceResult(ctx context.Context, req list.ListRequest, p string, ws *tenancyv1alpha1.Workspace) list.ListResult {
	parent := p[:len(p)-len(ws.Name)-1]
	m := &workspaceResourceModel{ParentPath: types.StringValue(parent), ShardSelector: types.MapNull(types.StringType)}
	return listResult(ctx, req, p, workspaceIdentity{Path: types.StringValue(p)}, setModel(ctx, m, func() {
		(&workspaceResource{}).setFromWorkspace(m, describeWorkspace(p, ws), ws)
	}))
}
