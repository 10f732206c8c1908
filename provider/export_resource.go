package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

var (
	_ identifiedResource                    = &exportResource{}
	_ resource.ResourceWithModifyPlan       = &exportResource{}
	_ resource.ResourceWithConfigValidators = &exportResource{}
)

const defaultExportTimeout = 2 * time.Minute

// NewExportResource returns the depctrl_export resource.
func NewExportResource() resource.Resource { return &exportResource{resourceType{name: "export"}} }

type exportResource struct{ resourceType }

type exportResourceModel struct {
	workspaceObjectModel
	RuntimeUsers     types.Set    `tfsdk:"runtime_users"`
	RuntimeGroups    types.Set    `tfsdk:"runtime_groups"`
	SchemaName       types.String `tfsdk:"schema_name"`
	PermissionClaims types.List   `tfsdk:"permission_claims"`
	AccessRules      types.List   `tfsdk:"access_rules"`
	IdentityHash     types.String `tfsdk:"identity_hash"`
	timed
}

func (r *exportResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The DependencyRule API in the dep-ctrl workspace: the APIResourceSchema bundled with this provider version, " +
			"the APIExport that serves it and claims, in the workspaces that bind it, `validatingwebhookconfigurations` (to install " +
			"the deletion webhook), `mutatingwebhookconfigurations` (so that the controller can install the reference index webhook " +
			"next to the rules), the creation of Events (to report on rules next to them), and `get` on `apiexports` and " +
			"`apiresourceschemas` (read-only, to check that the types a rule names are served), " +
			"and the RBAC the runtime identities need there (read the export's endpoint slice, use `apiexports/content`, " +
			"hold the leader-election lease, record events).\n\n" +
			"When a newer provider version bundles a changed schema, apply points the export at the new schema and only then " +
			"deletes the old one, so rules stay readable throughout. A schema, claim or RBAC rule changed outside Terraform shows " +
			"in the next plan and apply restores it.\n\n" +
			"The export's virtual workspace URLs are not an attribute: kcp lists a shard's URL in the export's endpoint slice only " +
			"once a workspace on that shard binds the export, so a list kept in state would change after the apply that adds such " +
			"a binding. Each shard's URL is known before: `<virtual_workspace_url>/services/apiexport/<cluster>/<name>`, with " +
			"`virtual_workspace_url` from the `depctrl_shards` data source and `cluster` of the dep-ctrl workspace, as the example " +
			"below outputs.",
		Attributes: map[string]schema.Attribute{
			"id":             importIDAttribute(workspaceObjectIDDoc),
			"workspace_path": workspacePathAttribute("The path of the dep-ctrl workspace that hosts the export, such as `root:depctrl`."),
			"name": nameAttribute(v1alpha1.DefaultAPIExportName,
				"The APIExport name. Provider workspaces bind it by this name (`depctrl_provider_binding`'s `export_name`), and the runtime is started with it (`depctrl_runtime`'s `api_export_name`, which both binaries get as `--apiexport-name`).",
				stringvalidator.LengthBetween(1, 253),
				objectNameValidator("must be a lowercase DNS subdomain such as dependencies.opendefense.cloud")),
			"runtime_users": subjectsAttribute("Users the runtime controller and webhook authenticate as, such as `depctrl-controller`. " +
				"At least one of `runtime_users` and `runtime_groups` is required."),
			"runtime_groups": subjectsAttribute("Groups of the runtime identities, as an alternative or addition to `runtime_users`."),
			"schema_name": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The name of the APIResourceSchema the export serves. It changes when a provider upgrade bundles a new schema.",
			},
			"permission_claims": computedList("The export's permission claims, as `group/resource: verbs`."),
			"access_rules":      computedList("The rules of the `" + rbac.ExportAccessName + "` ClusterRole given to the runtime identities, one per line."),
			"identity_hash":     computedKept("The export's identity hash, which kcp assigns."),
		},
		Blocks: timeoutsOnly(ctx, "the {op} of the export", sameTimeouts(defaultExportTimeout)),
	}
	documentSchema(ctx, &resp.Schema)
}

func (r *exportResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		resourcevalidator.AtLeastOneOf(path.MatchRoot("runtime_users"), path.MatchRoot("runtime_groups")),
	}
}

func (r *exportResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = workspaceObjectIdentitySchema(
		"The path of the dep-ctrl workspace that hosts the export, such as `root:depctrl`.",
		"The APIExport name, such as `"+v1alpha1.DefaultAPIExportName+"`.")
}

// desiredExport is what the export resource keeps in kcp.
type desiredExport struct {
	schema *apisv1alpha1.APIResourceSchema
	export *apisv1alpha2.APIExport
	access rbac.Grant
}

func (m *exportResourceModel) desired(ctx context.Context) (desiredExport, error) {
	var users, groups []string
	if d := m.RuntimeUsers.ElementsAs(ctx, &users, false); d.HasError() {
		return desiredExport{}, fmt.Errorf("reading runtime_users")
	}
	if d := m.RuntimeGroups.ElementsAs(ctx, &groups, false); d.HasError() {
		return desiredExport{}, fmt.Errorf("reading runtime_groups")
	}
	name := m.Name.ValueString()
	return desiredExport{
		schema: v1alpha1.APIResourceSchema(),
		export: v1alpha1.APIExport(name),
		access: rbac.ExportAccess(name, subjectsFrom(users, groups)),
	}, nil
}

func (d desiredExport) objects() []object {
	return []object{
		{apiResourceSchemasGVR, d.schema},
		{apiExportsGVR, d.export},
		{clusterRolesGVR, d.access.Role},
		{clusterRoleBindingsGVR, d.access.Binding},
	}
}

// ModifyPlan plans the server-side content the provider owns but the user
// does not write: the bundled schema, the claims and the RBAC rules. A
// difference from state (an upgrade, or a change made outside Terraform)
// becomes a visible update.
func (r *exportResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	plan, ok := getModel[exportResourceModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok || plan.Name.IsUnknown() {
		return
	}
	d, err := plan.desired(ctx)
	if err != nil {
		return // unknown subjects: the rules do not depend on them
	}
	plan.SchemaName = types.StringValue(d.schema.Name)
	plan.PermissionClaims = stringList(claimStrings(d.export.Spec.PermissionClaims))
	plan.AccessRules = stringList(ruleStrings(d.access.Role.Rules))
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *exportResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	plan, timeout, ok := getTimed[exportResourceModel](ctx, req.Plan, timeouts.Value.Create, defaultExportTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	r.apply(ctx, &plan, "", timeout, &resp.Diagnostics)
	saveState(ctx, &resp.State, resp.Identity, &plan, plan.identity(), &resp.Diagnostics)
}

func (r *exportResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	state, _ := getModel[exportResourceModel](ctx, req.State, &resp.Diagnostics)
	plan, timeout, ok := getTimed[exportResourceModel](ctx, req.Plan, timeouts.Value.Update, defaultExportTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	r.apply(ctx, &plan, state.SchemaName.ValueString(), timeout, &resp.Diagnostics)
	saveState(ctx, &resp.State, resp.Identity, &plan, plan.identity(), &resp.Diagnostics)
}

// apply makes kcp match the plan. The new schema goes in before the export
// points at it, and a previous schema is deleted only after, so the API is
// served throughout an upgrade.
func (r *exportResource) apply(ctx context.Context, m *exportResourceModel, previousSchema string, timeout time.Duration, diags *diagnostics) {
	ws := m.WorkspacePath.ValueString()
	d, err := m.desired(ctx)
	if err != nil {
		diags.AddError("Invalid runtime subjects", err.Error())
		return
	}
	client, ok := r.conn.dynamicIn(ws, diags)
	if !ok {
		return
	}
	tflog.Info(ctx, "applying the dep-ctrl export", map[string]interface{}{"workspace": ws, "export": d.export.Name, "schema": d.schema.Name})
	if err := applyObjects(ctx, client, d.objects()...); err != nil {
		diags.Append(explainIn(ctx, r.conn, ws, "applying the dep-ctrl export", err))
		return
	}
	if previousSchema != "" && previousSchema != d.schema.Name {
		tflog.Info(ctx, "removing the previous APIResourceSchema", map[string]interface{}{"schema": previousSchema})
		old := object{apiResourceSchemasGVR, &apisv1alpha1.APIResourceSchema{}}
		old.Obj.(*apisv1alpha1.APIResourceSchema).Name = previousSchema
		if err := deleteObjects(ctx, client, timeout, old); err != nil {
			diags.Append(explain(r.conn.Host(), "removing the previous APIResourceSchema "+previousSchema, err))
			return
		}
	}
	err = waitUntil(ctx, timeout, fmt.Sprintf("APIExport %q in %s to get its identity", d.export.Name, ws), func(ctx context.Context) (bool, string, error) {
		found, err := r.read(ctx, client, m)
		if err != nil || !found {
			return false, "", err
		}
		return m.IdentityHash.ValueString() != "", "no identity hash yet", nil
	})
	if err != nil {
		diags.AddError("APIExport not ready", err.Error())
		return
	}
	m.ID = types.StringValue(ws + "/" + d.export.Name)
}

// read fills m from kcp; found is false when the APIExport is gone.
func (r *exportResource) read(ctx context.Context, client dynamic.Interface, m *exportResourceModel) (bool, error) {
	name := m.Name.ValueString()
	var export apisv1alpha2.APIExport
	found, err := getObject(ctx, client, apiExportsGVR, name, &export)
	if err != nil || !found {
		return false, err
	}
	m.SchemaName = types.StringValue("")
	for _, res := range export.Spec.Resources {
		if res.Group == v1alpha1.Group && res.Name == v1alpha1.Resource {
			m.SchemaName = types.StringValue(res.Schema)
		}
	}
	m.PermissionClaims = stringList(claimStrings(export.Spec.PermissionClaims))
	m.IdentityHash = types.StringValue(export.Status.IdentityHash)

	var role rbacv1.ClusterRole
	if found, err := getObject(ctx, client, clusterRolesGVR, rbac.ExportAccessName, &role); err != nil {
		return false, err
	} else if found {
		m.AccessRules = stringList(ruleStrings(role.Rules))
	} else {
		m.AccessRules = stringList(nil)
	}
	var binding rbacv1.ClusterRoleBinding
	if found, err := getObject(ctx, client, clusterRoleBindingsGVR, rbac.ExportAccessName, &binding); err != nil {
		return false, err
	} else if found {
		users, groups := splitSubjects(binding.Subjects)
		m.RuntimeUsers = keepNullIfEmpty(m.RuntimeUsers, users)
		m.RuntimeGroups = keepNullIfEmpty(m.RuntimeGroups, groups)
	} else {
		m.RuntimeUsers = keepNullIfEmpty(m.RuntimeUsers, stringSet(nil))
		m.RuntimeGroups = keepNullIfEmpty(m.RuntimeGroups, stringSet(nil))
	}
	return true, nil
}

func (r *exportResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	state, ok := getModel[exportResourceModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	readWorkspaceObject(ctx, r.conn, resp, &state, state.identity(), "APIExport", "reading the dep-ctrl export", func(client dynamic.Interface) (bool, error) {
		return r.read(ctx, client, &state)
	})
}

func (r *exportResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, timeout, ok := getTimed[exportResourceModel](ctx, req.State, timeouts.Value.Delete, defaultExportTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	ws := state.WorkspacePath.ValueString()
	d, err := state.desired(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Invalid runtime subjects", err.Error())
		return
	}
	if s := state.SchemaName.ValueString(); s != "" {
		d.schema.Name = s
	}
	client, ok := r.conn.dynamicIn(ws, &resp.Diagnostics)
	if !ok {
		return
	}
	tflog.Info(ctx, "deleting the dep-ctrl export", map[string]interface{}{"workspace": ws, "export": d.export.Name})
	if err := deleteObjects(ctx, client, timeout, d.objects()...); err != nil {
		if workspaceGone(ctx, r.conn, ws, err) {
			return
		}
		resp.Diagnostics.Append(explainIn(ctx, r.conn, ws, "deleting the dep-ctrl export", err))
	}
}

// ImportState takes <workspace path>/<export name>, or the identity.
func (r *exportResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importWorkspaceObject(ctx, req, resp, "export", "root:depctrl/"+v1alpha1.DefaultAPIExportName)
}

// claimStrings renders permission claims as group/resource: verbs.
func claimStrings(claims []apisv1alpha2.PermissionClaim) []string {
	out := make([]string, 0, len(claims))
	for _, c := range claims {
		out = append(out, claimString(c))
	}
	sort.Strings(out)
	return out
}

func claimString(c apisv1alpha2.PermissionClaim) string {
	gr := c.Resource
	if c.Group != "" {
		gr = c.Group + "/" + c.Resource
	}
	verbs := append([]string(nil), c.Verbs...)
	sort.Strings(verbs)
	return gr + ": " + strings.Join(verbs, ",")
}

// keepNullIfEmpty reads an optional set back: an empty set read from kcp
// stays null when the configuration left the attribute out.
func keepNullIfEmpty(current, read types.Set) types.Set {
	if current.IsNull() && len(read.Elements()) == 0 {
		return current
	}
	return read
}
