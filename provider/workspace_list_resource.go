package provider

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	_ list.ListResource              = &workspaceListResource{}
	_ list.ListResourceWithConfigure = &workspaceListResource{}
)

// NewWorkspaceListResource returns the depctrl_workspace list resource.
func NewWorkspaceListResource() list.ListResource { return &workspaceListResource{} }

// workspaceListResource lists the workspaces under a path, for
// `terraform query`.
type workspaceListResource struct{ connected }

type workspaceListConfig struct {
	ParentPath types.String `tfsdk:"parent_path"`
	Recursive  types.Bool   `tfsdk:"recursive"`
}

func (l *workspaceListResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_workspace"
}

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
	var cfg workspaceListConfig
	if diags := req.Config.Get(ctx, &cfg); diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	parent := cfg.ParentPath.ValueString()
	if !validWorkspacePath(parent) {
		stream.Results = listError(diag.NewErrorDiagnostic("Invalid parent_path", fmt.Sprintf("parent_path: %q is not a workspace path, such as root:org", parent)))
		return
	}
	kcp, err := l.conn.KCP()
	if err != nil {
		stream.Results = listError(explain(l.conn.Host(), "connecting to kcp", err))
		return
	}
	stream.Results = func(push func(list.ListResult) bool) {
		var n int64
		walkTree(ctx, kcp, parent, cfg.Recursive.ValueBool(), func(p string, ws *tenancyv1alpha1.Workspace) bool {
			n++
			return push(workspaceResult(ctx, req, p, ws)) && (req.Limit <= 0 || n < req.Limit)
		}, func(parent string, err error) bool {
			return pushError(ctx, req, push, explain(l.conn.Host(), "listing the workspaces in "+parent, err))
		})
	}
}

// walkTree visits the workspaces below parent in name order, depth first,
// descending into each Ready one when recursive. visit and failed (told of
// a workspace whose children could not be listed) return false to stop;
// walkTree returns false when one did.
func walkTree(ctx context.Context, kcp kcpclientset.ClusterInterface, parent string, recursive bool,
	visit func(p string, ws *tenancyv1alpha1.Workspace) bool, failed func(parent string, err error) bool) bool {
	wss, err := kcp.Cluster(logicalcluster.NewPath(parent)).TenancyV1alpha1().Workspaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return failed(parent, err)
	}
	items := wss.Items
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	for i := range items {
		p := parent + ":" + items[i].Name
		if !visit(p, &items[i]) {
			return false
		}
		if recursive && items[i].Status.Phase == "Ready" && !walkTree(ctx, kcp, p, true, visit, failed) {
			return false
		}
	}
	return true
}

// workspaceResult is one workspace as a list result.
func workspaceResult(ctx context.Context, req list.ListRequest, p string, ws *tenancyv1alpha1.Workspace) list.ListResult {
	parent := p[:len(p)-len(ws.Name)-1]
	m := &workspaceResourceModel{ParentPath: types.StringValue(parent), ShardSelector: types.MapNull(types.StringType)}
	return listResult(ctx, req, p, workspaceIdentity{Path: types.StringValue(p)}, setModel(ctx, m, func() {
		(&workspaceResource{}).setFromWorkspace(m, describeWorkspace(p, ws), ws)
	}))
}
