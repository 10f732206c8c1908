package provider

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
)

var (
	_ identifiedResource                    = &rootRBACResource{}
	_ resource.ResourceWithModifyPlan       = &rootRBACResource{}
	_ resource.ResourceWithConfigValidators = &rootRBACResource{}
)

const defaultRBACTimeout = time.Minute

// NewRootRBACResource returns the depctrl_root_rbac resource.
func NewRootRBACResource() resource.Resource {
	// The identity names the workspaces that hold the grant, and
	// parent_paths changes in place.
	return &rootRBACResource{resourceType{name: "root_rbac", mutableIdentity: true}}
}

type rootRBACResource struct{ resourceType }

type rootRBACModel struct {
	ID               types.String `tfsdk:"id"`
	Name             types.String `tfsdk:"name"`
	ControllerUsers  types.Set    `tfsdk:"controller_users"`
	ControllerGroups types.Set    `tfsdk:"controller_groups"`
	ParentPaths      types.Set    `tfsdk:"parent_paths"`
	Rules            types.List   `tfsdk:"rules"`
	timed
}

func (r *rootRBACResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The access the runtime controller needs outside the dep-ctrl workspace: the `" + rbac.WorkspaceReaderName + "` " +
			"ClusterRole and ClusterRoleBinding, which let it read Workspace objects, in `root` and in every intermediate workspace " +
			"of a protected export's path. That is how the controller resolves `apiExportRef.path`, such as `root:org:network`, to a " +
			"logical cluster, one segment at a time. The controller reaches provider workspaces only through the dep-ctrl " +
			"export's virtual workspace, so it needs nothing else there. The dep-ctrl workspace's own place does not matter: a nested one, " +
			"such as `root:platform:deps`, needs nothing in `root:platform` (the webhook of `TestProcessesGuide` runs from `root:<org>:depctrl` " +
			"with grants in it and on the shards alone); list `root:platform` only when a rule's export path runs through it.\n\n" +
			"The grant in `root` adds nothing that kcp does not already give every authenticated user there: kcp's `root` " +
			"workspace binds the ClusterRoles `system:kcp:tenancy:reader` (`get`, `list` and `watch` of workspaces, workspace types " +
			"and logical clusters) and `system:kcp:workspace:access` (`access` to the workspace) to the group `system:authenticated`, " +
			"by the ClusterRoleBindings `system:kcp:authenticated:tenancy:reader` and `system:kcp:tenancy:authenticated:access` " +
			"(kcp v0.32; the root shard creates them again whenever it starts). It is needed where an operator removed or narrowed " +
			"those bindings, and it keeps the controller working if that happens later. The grants in `parent_paths` are needed in " +
			"any case: in other workspaces a default kcp grants no such thing.\n\n" +
			"There is one of these per installation. A grant removed or changed outside Terraform shows in the next plan: with its " +
			"ClusterRole or ClusterRoleBinding in `root` deleted, the resource is gone and the plan creates it again; a parent " +
			"workspace whose grant is missing or differs drops out of `parent_paths` until apply restores it; rules or subjects " +
			"changed in `root` show in `rules`, `controller_users` and `controller_groups`.",
		Attributes: map[string]schema.Attribute{
			"id": importIDAttribute("`root` followed by the `parent_paths`, joined by `,`, and `/<name>` when `name` is not the default: the import ID."),
			"name": nameAttribute(rbac.WorkspaceReaderName, "The name of the ClusterRole and ClusterRoleBinding. Change it only to run two installations in one kcp.",
				stringvalidator.LengthBetween(1, 253)),
			"controller_users": subjectsAttribute("Users the controller authenticates as, such as `depctrl-controller`. " +
				"At least one of `controller_users` and `controller_groups` is required."),
			"controller_groups": subjectsAttribute("Groups of the controller identity."),
			"parent_paths": schema.SetAttribute{
				Optional:    true,
				ElementType: types.StringType,
				MarkdownDescription: "Intermediate workspaces below `root` on the paths to protected exports. For an export in " +
					"`root:org:team:network`, list `root:org` and `root:org:team`. A path missing here shows as a rule condition " +
					"`WorkspacesResolved=False` with a permission error.",
				Validators: []validator.Set{setvalidator.ValueStringsAre(workspacePathValidator())},
			},
			"rules": computedList("The rules of the granted ClusterRole, one per line."),
		},
		Blocks: timeoutsOnly(ctx, "the {op} of the grants", sameTimeouts(defaultRBACTimeout)),
	}
	documentSchema(ctx, &resp.Schema)
}

func (r *rootRBACResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		resourcevalidator.AtLeastOneOf(path.MatchRoot("controller_users"), path.MatchRoot("controller_groups")),
	}
}

// rootRBACIdentity names the grant: its name and the workspaces besides
// root that hold it, as the import ID does (root,<parent paths>/<name>).
type rootRBACIdentity struct {
	Name        types.String `tfsdk:"name"`
	ParentPaths types.List   `tfsdk:"parent_paths"`
}

func (r *rootRBACResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			"name": identityschema.StringAttribute{
				OptionalForImport: true,
				Description:       "The name of the ClusterRole and ClusterRoleBinding, `" + rbac.WorkspaceReaderName + "` when not given.",
			},
			"parent_paths": identityschema.ListAttribute{
				OptionalForImport: true,
				ElementType:       types.StringType,
				Description: "The workspaces besides `root` that hold the grant (`parent_paths`), sorted; null when `parent_paths` is. " +
					"Unlike other identities this one changes when `parent_paths` does.",
			},
		},
	}
}

// identity is m's identity: the grant's name and its parent paths, sorted;
// null when parent_paths is, so that an import by identity reads back the
// configuration it came from.
func (m *rootRBACModel) identity(ctx context.Context) rootRBACIdentity {
	id := rootRBACIdentity{Name: m.Name, ParentPaths: types.ListNull(types.StringType)}
	if parents := m.paths(ctx)[1:]; len(parents) > 0 || (!m.ParentPaths.IsNull() && !m.ParentPaths.IsUnknown()) {
		id.ParentPaths = stringList(parents)
	}
	return id
}

// paths returns root and the parent paths, sorted, without duplicates.
func (m *rootRBACModel) paths(ctx context.Context) []string {
	var extra []string
	_ = m.ParentPaths.ElementsAs(ctx, &extra, false)
	seen := map[string]bool{"root": true}
	out := []string{"root"}
	for _, p := range extra {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out[1:])
	return out
}

// id is the import ID: the paths, and the name unless it is the default.
func (m *rootRBACModel) id(ctx context.Context) string {
	id := strings.Join(m.paths(ctx), ",")
	if n := m.Name.ValueString(); n != "" && n != rbac.WorkspaceReaderName {
		id += "/" + n
	}
	return id
}

func (m *rootRBACModel) grant(ctx context.Context) rbac.Grant {
	var users, groups []string
	_ = m.ControllerUsers.ElementsAs(ctx, &users, false)
	_ = m.ControllerGroups.ElementsAs(ctx, &groups, false)
	return renamed(rbac.WorkspaceReader(subjectsFrom(users, groups)), m.Name.ValueString())
}

func (r *rootRBACResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	plan, ok := getModel[rootRBACModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	plan.Rules = stringList(ruleStrings(rbac.WorkspaceReader(nil).Role.Rules))
	if setKnown(plan.ParentPaths) {
		plan.ID = types.StringValue(plan.id(ctx))
	} else {
		plan.ID = types.StringUnknown()
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *rootRBACResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	plan, timeout, ok := getTimed[rootRBACModel](ctx, req.Plan, timeouts.Value.Create, defaultRBACTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.apply(ctx, &plan, &resp.Diagnostics)
	saveState(ctx, &resp.State, resp.Identity, &plan, plan.identity(ctx), &resp.Diagnostics)
}

func (r *rootRBACResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	state, _ := getModel[rootRBACModel](ctx, req.State, &resp.Diagnostics)
	plan, timeout, ok := getTimed[rootRBACModel](ctx, req.Plan, timeouts.Value.Update, defaultRBACTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Workspaces dropped from parent_paths lose the grant.
	keep := map[string]bool{}
	for _, p := range plan.paths(ctx) {
		keep[p] = true
	}
	var dropped []string
	for _, p := range state.paths(ctx) {
		if !keep[p] {
			dropped = append(dropped, p)
		}
	}
	r.apply(ctx, &plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	r.remove(ctx, state.Name.ValueString(), dropped, timeout, &resp.Diagnostics)
	saveState(ctx, &resp.State, resp.Identity, &plan, plan.identity(ctx), &resp.Diagnostics)
}

func (r *rootRBACResource) apply(ctx context.Context, m *rootRBACModel, diags *diagnostics) {
	g := m.grant(ctx)
	for _, p := range m.paths(ctx) {
		client, ok := r.conn.dynamicIn(p, diags)
		if !ok {
			return
		}
		tflog.Info(ctx, "granting workspace read access", map[string]interface{}{"workspace": p})
		if err := applyObjects(ctx, client, object{clusterRolesGVR, g.Role}, object{clusterRoleBindingsGVR, g.Binding}); err != nil {
			diags.Append(explainIn(ctx, r.conn, p, "granting workspace read access in "+p, err))
			return
		}
	}
	m.ID = types.StringValue(m.id(ctx))
	m.Rules = stringList(ruleStrings(g.Role.Rules))
}

func (r *rootRBACResource) remove(ctx context.Context, name string, paths []string, timeout time.Duration, diags *diagnostics) {
	g := renamed(rbac.WorkspaceReader(nil), name)
	for _, p := range paths {
		client, ok := r.conn.dynamicIn(p, diags)
		if !ok {
			return
		}
		tflog.Info(ctx, "revoking workspace read access", map[string]interface{}{"workspace": p})
		if err := deleteObjects(ctx, client, timeout, object{clusterRolesGVR, g.Role}, object{clusterRoleBindingsGVR, g.Binding}); err != nil {
			if workspaceGone(ctx, r.conn, p, err) {
				continue
			}
			diags.Append(explainIn(ctx, r.conn, p, "revoking workspace read access in "+p, err))
			return
		}
	}
}

// Read checks the grant in every workspace. The grant in root is the
// resource itself: when its ClusterRole or ClusterRoleBinding is gone, the
// resource is gone, and the plan creates it again with the configuration's
// values. Where a parent workspace's grant is missing, or its rules or
// subjects differ from what was applied, that workspace drops out of
// parent_paths in state; root's rules and subjects are read back into
// rules and the controller subjects. So the plan shows what apply will
// restore, and nothing else.
func (r *rootRBACResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	state, ok := getModel[rootRBACModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	want := ruleStrings(rbac.WorkspaceReader(nil).Role.Rules)
	// The subjects as applied, before root's binding is read over them: a
	// parent workspace's grant is intact when it names these. An import
	// knows none, and takes root's.
	wantSubjects := state.grant(ctx).Binding.Subjects
	var intact []string
	for _, p := range state.paths(ctx) {
		client, ok := r.conn.dynamicIn(p, &resp.Diagnostics)
		if !ok {
			return
		}
		var role rbacv1.ClusterRole
		var binding rbacv1.ClusterRoleBinding
		roleFound, err := getObject(ctx, client, clusterRolesGVR, state.Name.ValueString(), &role)
		var bindingFound bool
		if err == nil {
			bindingFound, err = getObject(ctx, client, clusterRoleBindingsGVR, state.Name.ValueString(), &binding)
		}
		if err != nil {
			if workspaceGone(ctx, r.conn, p, err) {
				continue
			}
			resp.Diagnostics.Append(explainIn(ctx, r.conn, p, "reading workspace read access in "+p, err))
			return
		}
		if p == "root" {
			if !roleFound || !bindingFound {
				tflog.Info(ctx, "the grant in root is gone; planning to create it again", map[string]interface{}{
					"name": state.Name.ValueString(), "cluster_role": roleFound, "cluster_role_binding": bindingFound})
				removeFromState(ctx, resp, state.identity(ctx))
				return
			}
			state.Rules = stringList(ruleStrings(role.Rules))
			if len(wantSubjects) == 0 {
				wantSubjects = binding.Subjects
			}
			users, groups := splitSubjects(binding.Subjects)
			state.ControllerUsers = keepNullIfEmpty(state.ControllerUsers, users)
			state.ControllerGroups = keepNullIfEmpty(state.ControllerGroups, groups)
			continue
		}
		if roleFound && bindingFound && slices.Equal(ruleStrings(role.Rules), want) && sameSubjects(binding.Subjects, wantSubjects) {
			intact = append(intact, p)
		}
	}
	if !state.ParentPaths.IsNull() || len(intact) > 0 {
		state.ParentPaths = stringSet(intact)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	setIdentity(ctx, resp.Identity, state.identity(ctx), &resp.Diagnostics)
}

func (r *rootRBACResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, timeout, ok := getTimed[rootRBACModel](ctx, req.State, timeouts.Value.Delete, defaultRBACTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	r.remove(ctx, state.Name.ValueString(), state.paths(ctx), timeout, &resp.Diagnostics)
}

// ImportState takes root and the parent paths joined by ",", such as
// root,root:org, optionally followed by "/" and a non-default name; or the
// identity, whose name and parent_paths say the same.
func (r *rootRBACResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	var m rootRBACModel
	if byIdentity(req) {
		id, ok := getModel[rootRBACIdentity](ctx, req.Identity, &resp.Diagnostics)
		if !ok {
			return
		}
		var parents []string
		resp.Diagnostics.Append(id.ParentPaths.ElementsAs(ctx, &parents, false)...)
		for _, p := range parents {
			if !validWorkspacePath(p) || p == "root" {
				resp.Diagnostics.AddError("Invalid import identity", fmt.Sprintf("%q in parent_paths is not a workspace path below root", p))
				return
			}
		}
		m.Name, m.ParentPaths = id.Name, stringSet(parents)
		if id.ParentPaths.IsNull() {
			m.ParentPaths = types.SetNull(types.StringType)
		}
		if m.Name.ValueString() == "" {
			m.Name = types.StringValue(rbac.WorkspaceReaderName)
		}
	} else {
		id, name, named := strings.Cut(req.ID, "/")
		paths := strings.Split(id, ",")
		if paths[0] != "root" {
			resp.Diagnostics.AddError("Invalid import ID",
				fmt.Sprintf("%q must be root followed by the parent paths, joined by ',', such as root,root:org", req.ID))
			return
		}
		for _, p := range paths[1:] {
			if !validWorkspacePath(p) {
				resp.Diagnostics.AddError("Invalid import ID", fmt.Sprintf("%q in %q is not a workspace path", p, req.ID))
				return
			}
		}
		if !named {
			name = rbac.WorkspaceReaderName
		}
		m.Name, m.ParentPaths = types.StringValue(name), types.SetNull(types.StringType)
		if len(paths) > 1 {
			m.ParentPaths = stringSet(paths[1:])
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), m.id(ctx))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), m.Name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("parent_paths"), m.ParentPaths)...)
	setIdentity(ctx, resp.Identity, m.identity(ctx), &resp.Diagnostics)
}

func sameSubjects(a, b []rbacv1.Subject) bool {
	key := func(s []rbacv1.Subject) []string {
		out := make([]string, len(s))
		for i, x := range s {
			out[i] = x.Kind + "/" + x.Name
		}
		sort.Strings(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// setKnown reports whether s and every element of it are known.
func setKnown(s types.Set) bool {
	if s.IsUnknown() {
		return false
	}
	for _, e := range s.Elements() {
		if e.IsUnknown() {
			return false
		}
	}
	return true
}
