package provider

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

var _ list.ListResourceWithConfigure = &dependencyRuleListResource{}

// NewDependencyRuleListResource returns the depctrl_dependency_rule list
// resource.
func NewDependencyRuleListResource() list.ListResource {
	return &dependencyRuleListResource{resourceType{name: "dependency_rule"}}
}

// dependencyRuleListResource lists the DependencyRules of a workspace or of
// a tree of workspaces, for `terraform query`.
type dependencyRuleListResource struct{ resourceType }

func (l *dependencyRuleListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The DependencyRules in `workspace_path` or, with `recursive`, in it and every workspace below it that " +
			"binds the dep-ctrl export (others are skipped), each with its workspace and name (the identity), its spec, and whether it is " +
			"`ready` with its conditions.",
		Attributes: map[string]schema.Attribute{
			"workspace_path": schema.StringAttribute{Required: true, MarkdownDescription: "The workspace whose rules are listed, such as `root:org:compute`."},
			"recursive":      schema.BoolAttribute{Optional: true, MarkdownDescription: "Also list the rules of every workspace below `workspace_path`. Default `false`."},
		},
	}
}

func (l *dependencyRuleListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	tree, ok := l.workspaceTree(ctx, req, stream, "workspace_path", "root:org:compute")
	if !ok {
		return
	}
	stream.Results = func(push func(list.ListResult) bool) {
		var n int64
		// rules pushes the rules of ws; in a tree (recursive), a workspace
		// that does not serve DependencyRules (no binding) holds none.
		rules := func(ws string, tree bool) bool {
			found, err := l.rulesIn(ctx, ws)
			if err != nil {
				if tree && apierrors.IsNotFound(err) {
					return true
				}
				return pushError(ctx, req, push, explainIn(ctx, l.conn, ws, "listing the DependencyRules in "+ws, err))
			}
			for _, rule := range found {
				if !push(ruleResult(ctx, req, ws, rule)) {
					return false
				}
				if n++; req.Limit > 0 && n >= req.Limit {
					return false
				}
			}
			return true
		}
		if !rules(tree.top, tree.recursive) || !tree.recursive {
			return
		}
		tree.walk(ctx, req, push, func(p string, ws *tenancyv1alpha1.Workspace) bool {
			return ws.Status.Phase != "Ready" || rules(p, true)
		})
	}
}

// rulesIn reads the rules of workspace ws, sorted by name.
func (l *dependencyRuleListResource) rulesIn(ctx context.Context, ws string) ([]*v1alpha1.DependencyRule, error) {
	client, err := l.conn.Dynamic(ws)
	if err != nil {
		return nil, err
	}
	objs, err := client.Resource(v1alpha1.GroupVersionResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	rules := make([]*v1alpha1.DependencyRule, 0, len(objs.Items))
	for _, o := range objs.Items {
		rule := &v1alpha1.DependencyRule{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, rule); err != nil {
			return nil, fmt.Errorf("decoding DependencyRule %s: %w", o.GetName(), err)
		}
		rules = append(rules, rule)
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].Name < rules[j].Name })
	return rules, nil
}

// ruleResult is one rule as a list result.
func ruleResult(ctx context.Context, req list.ListRequest, ws string, rule *v1alpha1.DependencyRule) list.ListResult {
	m := &ruleModel{
		workspaceObjectModel: workspaceObjectModel{ID: types.StringValue(ws + "/" + rule.Name), WorkspacePath: types.StringValue(ws), Name: types.StringValue(rule.Name)},
		WaitForEnforcement:   types.BoolValue(true),
	}
	return listResult(ctx, req, ws+"/"+rule.Name, m.identity(), setModel(ctx, m, func() { m.setFrom(rule) }))
}
