package provider

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workspaceTree is where a list over workspaces starts: the workspace its
// configuration names and, with recursive, every workspace below it.
type workspaceTree struct {
	conn      *Connection
	kcp       kcpclientset.ClusterInterface
	top       string
	recursive bool
}

// workspaceTree reads a list's configuration, the workspace path in
// attribute attr (such as example) and the recursive flag, and connects to
// kcp. Without ok, stream already holds the error.
func (t *resourceType) workspaceTree(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream, attr, example string) (tree workspaceTree, ok bool) {
	var top types.String
	var recursive types.Bool
	diags := req.Config.GetAttribute(ctx, path.Root(attr), &top)
	diags.Append(req.Config.GetAttribute(ctx, path.Root("recursive"), &recursive)...)
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return tree, false
	}
	tree = workspaceTree{conn: t.conn, top: top.ValueString(), recursive: recursive.ValueBool()}
	if !validWorkspacePath(tree.top) {
		stream.Results = listError(diag.NewErrorDiagnostic("Invalid "+attr, fmt.Sprintf("%s: %q is not a workspace path, such as %s", attr, tree.top, example)))
		return tree, false
	}
	var err error
	if tree.kcp, err = t.conn.KCP(); err != nil {
		stream.Results = listError(explain(t.conn.Host(), "connecting to kcp", err))
		return tree, false
	}
	return tree, true
}

// walk is walkTree from the top of the tree, recursive as its
// configuration says, for a List that streams to push: a workspace whose
// children cannot be listed becomes an error result.
func (t workspaceTree) walk(ctx context.Context, req list.ListRequest, push func(list.ListResult) bool, visit func(p string, ws *tenancyv1alpha1.Workspace) bool) bool {
	return walkTree(ctx, t.kcp, t.top, t.recursive, visit, func(parent string, err error) bool {
		return pushError(ctx, req, push, explain(t.conn.Host(), "listing the workspaces in "+parent, err))
	})
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
