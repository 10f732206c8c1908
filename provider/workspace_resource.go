package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ identifiedResource = &workspaceResource{}

const (
	defaultWorkspaceCreateTimeout = 5 * time.Minute
	defaultWorkspaceDeleteTimeout = 5 * time.Minute
)

var (
	workspaceNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	workspaceTypeRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*:[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// NewWorkspaceResource returns the depctrl_workspace resource.
func NewWorkspaceResource() resource.Resource {
	return &workspaceResource{resourceType{name: "workspace"}}
}

type workspaceResource struct{ resourceType }

type workspaceResourceModel struct {
	ID            types.String `tfsdk:"id"`
	Name          types.String `tfsdk:"name"`
	ParentPath    types.String `tfsdk:"parent_path"`
	Type          types.String `tfsdk:"type"`
	ShardSelector types.Map    `tfsdk:"shard_selector"`
	Path          types.String `tfsdk:"path"`
	Cluster       types.String `tfsdk:"cluster"`
	URL           types.String `tfsdk:"url"`
	Shard         types.String `tfsdk:"shard"`
	Phase         types.String `tfsdk:"phase"`
	timed
}

func (r *workspaceResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	computed := func(desc string) schema.StringAttribute {
		return computedKept(desc)
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A kcp workspace. Apply creates it and waits until it is `Ready`; destroy deletes it and waits until it is gone, " +
			"together with everything inside it. Every input is fixed at creation: changing one replaces the workspace.",
		Attributes: map[string]schema.Attribute{
			"id": computed("The workspace path, such as `root:org:network`."),
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "The workspace name: lowercase letters, digits and `-`, at most 63 characters.",
				Validators: []validator.String{
					stringvalidator.LengthBetween(1, 63),
					stringvalidator.RegexMatches(workspaceNameRE, "must consist of lowercase letters, digits and '-', and start and end with a letter or digit"),
				},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"parent_path": workspacePathAttribute("The path of the parent workspace, such as `root` or `root:org`."),
			"type": schema.StringAttribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: "The WorkspaceType as `path:name`, such as `root:universal`. " +
					"Defaults to the parent's default child type (`root:organization` under `root`, `root:universal` below).",
				Validators: []validator.String{
					stringvalidator.RegexMatches(workspaceTypeRE, "must be the WorkspaceType's workspace path and name joined by ':', such as root:universal"),
				},
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
			},
			"shard_selector": schema.MapAttribute{
				Optional:    true,
				ElementType: types.StringType,
				MarkdownDescription: "Labels of the Shard to schedule the workspace on, such as `{ name = \"shard-1\" }` where shards carry a `name` label. " +
					"Without it, kcp picks a shard.",
				PlanModifiers: []planmodifier.Map{mapplanmodifier.RequiresReplace()},
			},
			"path":    computed("The workspace path: `parent_path` and `name` joined by `:`."),
			"cluster": computed("The logical cluster name of the workspace."),
			"url":     computed("The URL that addresses the workspace, for use as a kubeconfig server."),
			"shard":   computed("The name of the shard that hosts the workspace."),
			"phase": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The workspace phase; `Ready` after apply.",
			},
		},
		Blocks: timeoutsOnly(ctx, "the {op} of the workspace", map[string]time.Duration{"create": defaultWorkspaceCreateTimeout, "delete": defaultWorkspaceDeleteTimeout}),
	}
	documentSchema(ctx, &resp.Schema)
}

// workspaceIdentity names a workspace by its path, the import ID.
type workspaceIdentity struct {
	Path types.String `tfsdk:"path"`
}

func (r *workspaceResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			"path": identityschema.StringAttribute{
				RequiredForImport: true,
				Description:       "The workspace path, such as `root:org:network`: `parent_path` and `name` joined by `:`.",
			},
		},
	}
}

func (r *workspaceResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	plan, timeout, ok := getTimed[workspaceResourceModel](ctx, req.Plan, timeouts.Value.Create, defaultWorkspaceCreateTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	kcp, ok := r.conn.kcpClient(&resp.Diagnostics)
	if !ok {
		return
	}
	parent, name, p := plan.location()

	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if t := plan.Type.ValueString(); t != "" {
		i := strings.LastIndex(t, ":")
		ws.Spec.Type = &tenancyv1alpha1.WorkspaceTypeReference{Path: t[:i], Name: tenancyv1alpha1.WorkspaceTypeName(t[i+1:])}
	}
	if !plan.ShardSelector.IsNull() {
		labels := map[string]string{}
		resp.Diagnostics.Append(plan.ShardSelector.ElementsAs(ctx, &labels, false)...)
		if resp.Diagnostics.HasError() {
			return
		}
		ws.Spec.Location = &tenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: labels}}
	}

	tflog.Info(ctx, "creating workspace", map[string]interface{}{"path": p})
	workspaces := kcp.Cluster(logicalcluster.NewPath(parent)).TenancyV1alpha1().Workspaces()
	// A parent that has just become Ready may not serve the workspaces API
	// for a moment (its tenancy binding is still being wired up on the
	// shard), and kcp answers 404 then. Retry that within the create
	// timeout; a parent that really is missing fails at once.
	var missingParent string
	err := waitUntil(ctx, timeout, fmt.Sprintf("workspace %q to accept child workspaces", parent), func(ctx context.Context) (bool, string, error) {
		_, err := workspaces.Create(ctx, ws, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			return true, "", permanentUnlessNil(err)
		}
		if missing := firstMissing(ctx, r.conn, p); missing != "" && missing != p {
			missingParent = missing
			return false, "", permanent(err)
		}
		return false, "the parent does not serve the workspaces API yet", err
	})
	if err != nil {
		switch {
		case missingParent != "":
			resp.Diagnostics.AddAttributeError(path.Root("parent_path"), "Parent workspace not found",
				(&workspaceNotFoundError{Path: parent, Missing: missingParent}).Error()+".")
		case apierrors.IsAlreadyExists(err):
			resp.Diagnostics.AddError("Workspace already exists",
				fmt.Sprintf("workspace %q already exists. To manage it with Terraform, import it: terraform import <address> %s", p, p))
		case apierrors.IsForbidden(err):
			if missing := firstMissing(ctx, r.conn, p); missing != "" && missing != p {
				resp.Diagnostics.AddAttributeError(path.Root("parent_path"), "Parent workspace not found",
					(&workspaceNotFoundError{Path: parent, Missing: missing}).Error()+".")
				return
			}
			resp.Diagnostics.Append(explain(r.conn.Host(), fmt.Sprintf("creating workspace %q", p), err))
		default:
			resp.Diagnostics.Append(explain(r.conn.Host(), fmt.Sprintf("creating workspace %q", p), err))
		}
		return
	}

	var got *tenancyv1alpha1.Workspace
	var changed <-chan struct{}
	if dyn, err := r.conn.Dynamic(parent); err == nil {
		var stopWatch func()
		changed, stopWatch = wakeOnChange(ctx, dyn.Resource(tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces")), name)
		defer stopWatch()
	}
	err = waitUntilWoken(ctx, timeout, fmt.Sprintf("workspace %q to become Ready", p), changed, func(ctx context.Context) (bool, string, error) {
		w, err := workspaces.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = w
		if w.DeletionTimestamp != nil {
			return false, "", permanent(fmt.Errorf("workspace %q is being deleted while it is being created", p))
		}
		return w.Status.Phase == corev1alpha1.LogicalClusterPhaseReady, workspaceState(w), nil
	})
	if err != nil {
		// The workspace exists: keep it in state so that the next apply
		// replaces it instead of failing on "already exists".
		plan.ID, plan.Path = types.StringValue(p), types.StringValue(p)
		if got != nil {
			r.setFromWorkspace(&plan, describeWorkspace(p, got), got)
		} else {
			plan.setUnknownComputedToNull()
		}
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		setIdentity(ctx, resp.Identity, workspaceIdentity{Path: types.StringValue(p)}, &resp.Diagnostics)
		resp.Diagnostics.AddError("Workspace not ready", err.Error())
		return
	}
	r.setFromWorkspace(&plan, describeWorkspace(p, got), got)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	setIdentity(ctx, resp.Identity, workspaceIdentity{Path: types.StringValue(p)}, &resp.Diagnostics)
}

func (r *workspaceResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	state, ok := getModel[workspaceResourceModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	kcp, ok := r.conn.kcpClient(&resp.Diagnostics)
	if !ok {
		return
	}
	parent, name, p := state.location()
	ws, err := kcp.Cluster(logicalcluster.NewPath(parent)).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || workspaceGone(ctx, r.conn, p, err) {
		tflog.Warn(ctx, "workspace is gone; it will be planned for creation", map[string]interface{}{"path": p})
		removeFromState(ctx, resp, workspaceIdentity{Path: types.StringValue(p)})
		return
	}
	if err != nil {
		resp.Diagnostics.Append(explain(r.conn.Host(), fmt.Sprintf("reading workspace %q", p), err))
		return
	}
	r.setFromWorkspace(&state, describeWorkspace(p, ws), ws)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	setIdentity(ctx, resp.Identity, workspaceIdentity{Path: types.StringValue(p)}, &resp.Diagnostics)
}

// Update only ever changes timeouts: every other input forces replacement.
func (r *workspaceResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	plan, _ := getModel[workspaceResourceModel](ctx, req.Plan, &resp.Diagnostics)
	state, ok := getModel[workspaceResourceModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	state.Timeouts = plan.Timeouts
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	setIdentity(ctx, resp.Identity, workspaceIdentity{Path: state.Path}, &resp.Diagnostics)
}

func (r *workspaceResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, timeout, ok := getTimed[workspaceResourceModel](ctx, req.State, timeouts.Value.Delete, defaultWorkspaceDeleteTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	kcp, ok := r.conn.kcpClient(&resp.Diagnostics)
	if !ok {
		return
	}
	parent, name, p := state.location()
	workspaces := kcp.Cluster(logicalcluster.NewPath(parent)).TenancyV1alpha1().Workspaces()
	tflog.Info(ctx, "deleting workspace", map[string]interface{}{"path": p})
	err := workspaces.Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		resp.Diagnostics.Append(explain(r.conn.Host(), fmt.Sprintf("deleting workspace %q", p), err))
		return
	}
	err = waitUntil(ctx, timeout, fmt.Sprintf("workspace %q to be deleted", p), func(ctx context.Context) (bool, string, error) {
		w, err := workspaces.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, workspaceState(w), nil
	})
	if err != nil {
		resp.Diagnostics.AddError("Workspace not deleted", err.Error())
	}
}

// ImportState takes the workspace path, such as root:org:network, as the
// import ID or as the identity's path.
func (r *workspaceResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	p, what := req.ID, "import ID"
	if byIdentity(req) {
		id, ok := getModel[workspaceIdentity](ctx, req.Identity, &resp.Diagnostics)
		if !ok {
			return
		}
		p, what = id.Path.ValueString(), "import identity"
	}
	if !validWorkspacePath(p) || p == "root" {
		resp.Diagnostics.AddError("Invalid "+what,
			fmt.Sprintf("%q is not a workspace path below root: import a workspace by its path, such as root:org:network", p))
		return
	}
	setIdentity(ctx, resp.Identity, workspaceIdentity{Path: types.StringValue(p)}, &resp.Diagnostics)
	i := strings.LastIndex(p, ":")
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), p)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("parent_path"), p[:i])...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), p[i+1:])...)
}

// setFromWorkspace copies what kcp reports into m. The shard selector is
// read back only when kcp kept one, so that drift in it shows up while a
// selector kcp does not echo never causes a diff.
func (r *workspaceResource) setFromWorkspace(m *workspaceResourceModel, info *workspaceInfo, ws *tenancyv1alpha1.Workspace) {
	m.ID = types.StringValue(info.Path)
	m.Path = types.StringValue(info.Path)
	m.Name = types.StringValue(info.Name)
	m.Cluster = types.StringValue(info.Cluster)
	m.URL = types.StringValue(info.URL)
	m.Shard = types.StringValue(info.Shard)
	m.Phase = types.StringValue(info.Phase)
	m.Type = types.StringValue(info.Type)
	if loc := ws.Spec.Location; loc != nil && loc.Selector != nil && len(loc.Selector.MatchLabels) > 0 {
		m.ShardSelector = stringMap(loc.Selector.MatchLabels)
	} else if m.ShardSelector.IsUnknown() {
		m.ShardSelector = types.MapNull(types.StringType)
	}
}

// location is where m's workspace is: the parent's path, the name, and
// the workspace's own path.
func (m *workspaceResourceModel) location() (parent, name, path string) {
	parent, name = m.ParentPath.ValueString(), m.Name.ValueString()
	return parent, name, parent + ":" + name
}

func (m *workspaceResourceModel) setUnknownComputedToNull() {
	for _, v := range []*types.String{&m.Cluster, &m.URL, &m.Shard, &m.Phase, &m.Type} {
		if v.IsUnknown() {
			*v = types.StringNull()
		}
	}
}

func workspaceState(ws *tenancyv1alpha1.Workspace) string {
	s := "phase " + string(ws.Status.Phase)
	if ws.Status.Phase == "" {
		s = "not scheduled yet"
	}
	for _, c := range ws.Status.Conditions {
		if c.Status != "True" && c.Message != "" {
			s += fmt.Sprintf(", %s: %s", c.Type, c.Message)
		}
	}
	if ws.DeletionTimestamp != nil {
		s += ", deleting"
	}
	return s
}

func stringMap(m map[string]string) types.Map {
	out, _ := types.MapValueFrom(context.Background(), types.StringType, m)
	return out
}
