package provider

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

var _ datasource.DataSourceWithConfigure = &dependencyRulesDataSource{}

// NewDependencyRulesDataSource returns the depctrl_dependency_rules data
// source.
func NewDependencyRulesDataSource() datasource.DataSource {
	return &dependencyRulesDataSource{dataSourceType{name: "dependency_rules"}}
}

type dependencyRulesDataSource struct{ dataSourceType }

var ruleSummaryType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name":           types.StringType,
	"dependent":      types.StringType,
	"dependencies":   types.ListType{ElemType: types.StringType},
	"defer_deletion": types.BoolType,
	"ready":          types.BoolType,
	"conditions":     types.MapType{ElemType: types.StringType},
}}

type dependencyRulesModel struct {
	ID            types.String `tfsdk:"id"`
	WorkspacePath types.String `tfsdk:"workspace_path"`
	Rules         types.List   `tfsdk:"rules"`
}

func (d *dependencyRulesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The DependencyRules in a workspace, with their status: whatever created them (Terraform or not). " +
			"Use it to check that the rules of an installation are enforced.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "The workspace path."},
			"workspace_path": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "The workspace to list, such as `root:compute`.",
				Validators:          []validator.String{workspacePathValidator()},
			},
			"rules": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The rules, sorted by name. Empty when the workspace has not bound the dep-ctrl export.",
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"name":      schema.StringAttribute{Computed: true, MarkdownDescription: "The rule name."},
						"dependent": schema.StringAttribute{Computed: true, MarkdownDescription: "The dependent type as `resource.group`."},
						"dependencies": schema.ListAttribute{
							Computed: true, ElementType: types.StringType,
							MarkdownDescription: "Each dependency as `resource.group in <export path>/<export name> at <field path>`.",
						},
						"defer_deletion": schema.BoolAttribute{
							Computed: true,
							MarkdownDescription: "Whether the rule defers the refused deletions of the objects it protects (`spec.deferDeletion`, " +
								"`defer_deletion` of `depctrl_dependency_rule`); `false` for a rule that does not set it.",
						},
						"ready":      schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the webhook enforces the rule's current generation."},
						"conditions": schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Status conditions by type, as `<status> <reason>: <message>`."},
					},
				},
			},
		},
	}
}

func (d *dependencyRulesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	m, _ := getModel[dependencyRulesModel](ctx, req.Config, &resp.Diagnostics)
	conn, ok := d.connection(&resp.Diagnostics)
	if !ok {
		return
	}
	ws := m.WorkspacePath.ValueString()
	client, ok := conn.dynamicIn(ws, &resp.Diagnostics)
	if !ok {
		return
	}
	list, err := client.Resource(v1alpha1.GroupVersionResource).List(ctx, metav1.ListOptions{})
	var items []v1alpha1.DependencyRule
	switch {
	case apierrors.IsNotFound(err) && firstMissing(ctx, conn, ws) == "":
		// The workspace exists but does not serve rules: none there.
	case err != nil:
		resp.Diagnostics.Append(explainIn(ctx, conn, ws, "listing DependencyRules in "+ws, err))
		return
	default:
		for _, u := range list.Items {
			var r v1alpha1.DependencyRule
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
				resp.Diagnostics.AddError("Cannot decode DependencyRule", fmt.Sprintf("%s in %s: %v", u.GetName(), ws, err))
				return
			}
			items = append(items, r)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	var rules []attr.Value
	for i := range items {
		obj, diags := ruleSummary(&items[i])
		resp.Diagnostics.Append(diags...)
		rules = append(rules, obj)
	}
	l, diags := types.ListValue(ruleSummaryType, rules)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.ID = types.StringValue(ws)
	m.Rules = l
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// ruleSummary is r as an element of rules (ruleSummaryType).
func ruleSummary(r *v1alpha1.DependencyRule) (types.Object, diag.Diagnostics) {
	var deps []string
	for _, dep := range r.Spec.Dependencies {
		deps = append(deps, fmt.Sprintf("%s.%s in %s/%s at %s", dep.Resource, dep.Group, dep.APIExportRef.Path, dep.APIExportRef.Name, dep.FieldRef.Path))
	}
	conds := map[string]string{}
	for _, c := range r.Status.Conditions {
		conds[c.Type] = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
	}
	return types.ObjectValue(ruleSummaryType.AttrTypes, map[string]attr.Value{
		"name":           types.StringValue(r.Name),
		"dependent":      types.StringValue(r.Spec.Dependent.Resource + "." + r.Spec.Dependent.Group),
		"dependencies":   stringList(deps),
		"defer_deletion": types.BoolValue(r.Spec.DeferDeletion),
		"ready":          types.BoolValue(enforced(r)),
		"conditions":     stringMap(conds),
	})
}
