package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

var (
	_ identifiedResource              = &objectResource{}
	_ resource.ResourceWithModifyPlan = &objectResource{}
)

const (
	defaultObjectTimeout       = 5 * time.Minute
	defaultObjectDeleteTimeout = 10 * time.Minute
)

// NewObjectResource returns the depctrl_object resource.
func NewObjectResource() resource.Resource {
	// The identity holds the apiVersion, whose version a manifest may
	// change in place.
	return &objectResource{resourceType{name: "object", mutableIdentity: true}}
}

// objectResource is any object in a kcp workspace, such as a tenant's VPC
// or VirtualMachine, applied with server-side apply.
type objectResource struct{ resourceType }

type objectModel struct {
	ID              types.String `tfsdk:"id"`
	WorkspacePath   types.String `tfsdk:"workspace_path"`
	Manifest        types.String `tfsdk:"manifest"`
	WaitForDeletion types.Bool   `tfsdk:"wait_for_deletion"`
	UID             types.String `tfsdk:"uid"`
	LiveFingerprint types.String `tfsdk:"live_fingerprint"`
	timed
}

// objectIdentity names the object: its workspace, apiVersion, kind,
// namespace (null for a cluster-scoped object) and name.
type objectIdentity struct {
	WorkspacePath types.String `tfsdk:"workspace_path"`
	APIVersion    types.String `tfsdk:"api_version"`
	Kind          types.String `tfsdk:"kind"`
	Namespace     types.String `tfsdk:"namespace"`
	Name          types.String `tfsdk:"name"`
}

func objectIdentityOf(ws string, ref objectRef) objectIdentity {
	ns := types.StringNull()
	if ref.Namespace != "" {
		ns = types.StringValue(ref.Namespace)
	}
	return objectIdentity{WorkspacePath: types.StringValue(ws), APIVersion: types.StringValue(ref.APIVersion), Kind: types.StringValue(ref.Kind),
		Namespace: ns, Name: types.StringValue(ref.Name)}
}

func (r *objectResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Any object in a kcp workspace, such as a tenant's VPC or VirtualMachine, given as a manifest and applied with " +
			"server-side apply (field manager `" + fieldManager + "`, forced: apply takes back a field someone changed by hand). " +
			"The type is looked up in the workspace's discovery, so any type the workspace serves works, bound from an APIExport or its own.\n\n" +
			"Destroy deletes the object and, with `wait_for_deletion`, waits until it is gone. A deletion that deletion protection " +
			"refuses because other objects still reference the object is either deferred or only refused, as the dependency webhook says.\n\n" +
			"**Deferred** (the object, its namespace or a rule that protects it opts in to deferred deletion; see the deferred deletion guide): " +
			"the webhook deletes the object once nothing references it, and destroy waits for that within the delete timeout. Terraform " +
			"destroys resources that do not depend on each other at the same time, so a `terraform destroy` of a tenant's objects converges " +
			"in one run without `depends_on`: the object goes once the resources of the objects that reference it are destroyed. Until then " +
			"its destroy holds one of Terraform's `-parallelism` slots (10 by default). Where the object is destroyed before the objects that " +
			"reference it (its resource depends on theirs), waiting would hold their destroy back until the timeout: set `wait_for_deletion = " +
			"false` there. A deletion still waiting at the timeout fails naming the dependents that still hold it, and stays deferred.\n\n" +
			"**Refused** (not deferred): destroy fails naming the object and quoting the webhook, and suggests opting in to deferral, or " +
			"`depends_on`.\n\n" +
			"Drift: `live_fingerprint` digests the live object's values at exactly the fields the manifest sets, and a plan expects the digest " +
			"of the manifest's own values, so a field the manifest sets that was changed outside Terraform shows as an update, which apply " +
			"takes back. Fields the manifest does not set (defaults, status, labels and annotations others write, such as kcp's and depctrl's) " +
			"never count.\n\n" +
			"Import takes `" + objectIDFormat + "` (see `id`). The imported state's manifest holds only what names the object " +
			"(apiVersion, kind, metadata.name and metadata.namespace), so the first plan after an import shows an update of `manifest` to " +
			"the configured one: applying it takes ownership of the fields the configuration sets.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "`" + objectIDFormat + "`, the import ID, such as `root:team-a/network.example.io/v1/VPC/apps/vpc-1`; " +
					"a cluster-scoped object has an empty namespace (`root:team-a/v1/Namespace//apps`). The apiVersion has a slash of its own " +
					"for a named group and none for the core group, and no other part may hold one, so an ID of six parts has a named group " +
					"and one of five the core group.",
			},
			"workspace_path": workspacePathAttribute("The workspace that holds the object, such as `root:team-a`."),
			"manifest": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The object: exactly one, as JSON or YAML, with `apiVersion`, `kind` and `metadata.name`, and " +
					"`metadata.namespace` for a namespaced type. In HCL, `yamlencode({ ... })` writes it. Checked at plan: a manifest that " +
					"is not one such object, or that sets `status`, metadata the API server sets (`uid`, `resourceVersion`, ...), or the " +
					"deferral record only the dependency webhook writes, fails on this attribute. A changed group of `apiVersion`, `kind`, " +
					"`metadata.name` or `metadata.namespace` names another object and replaces the resource; any other change (the " +
					"version of `apiVersion` included) updates the object in place. A field left out of a changed manifest is removed " +
					"from the object, if Terraform set it.",
				Validators: []validator.String{manifestValidator{}},
			},
			"wait_for_deletion": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(true),
				MarkdownDescription: "Whether destroy waits, within the delete timeout, until the object is gone: also when its deletion is " +
					"deferred, until the webhook has deleted it once nothing references it. `false` returns once the deletion is asked for; " +
					"a deferred one then returns with a warning. Default `true`.",
			},
			"uid": computedKept("The object's UID. Destroy deletes the object only while it has this UID, and a refresh that finds another object of the name " +
				"(deleted and created again since, by hand or with its workspace) does not adopt it: the plan creates the object, and create refuses to take over the other one (import it to manage it)."),
			"live_fingerprint": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "A sha256 of the live object's values at exactly the fields the manifest sets (`sha256:<hex>`). A plan " +
					"expects that of the manifest's own values: a difference is drift, which apply takes back.",
			},
		},
		Blocks: timeoutsOnly(ctx, "the {op} of the object", map[string]time.Duration{
			"create": defaultObjectTimeout, "update": defaultObjectTimeout, "delete": defaultObjectDeleteTimeout}),
	}
	documentSchema(ctx, &resp.Schema)
}

func (r *objectResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			"workspace_path": identityschema.StringAttribute{RequiredForImport: true, Description: "The workspace that holds the object, such as `root:team-a`."},
			"api_version":    identityschema.StringAttribute{RequiredForImport: true, Description: "The object's apiVersion, such as `network.example.io/v1`."},
			"kind":           identityschema.StringAttribute{RequiredForImport: true, Description: "The object's kind, such as `VPC`."},
			"namespace":      identityschema.StringAttribute{OptionalForImport: true, Description: "The object's namespace; left out for a cluster-scoped object."},
			"name":           identityschema.StringAttribute{RequiredForImport: true, Description: "The object's name."},
		},
	}
}

// manifestValidator checks at plan that a manifest is exactly one object
// that apply can write (parseManifest).
type manifestValidator struct{}

func (manifestValidator) Description(context.Context) string {
	return "must be exactly one object as JSON or YAML, with apiVersion, kind and metadata.name"
}

func (v manifestValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (manifestValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, _, err := parseManifest(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.Append(manifestError(req.Path, err))
	}
}

func manifestError(p path.Path, err error) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(p, "Invalid manifest",
		fmt.Sprintf("%s: %v. It must hold exactly one Kubernetes object, as JSON or YAML (yamlencode({ ... }) in HCL), with apiVersion, kind and metadata.name.", p, err))
}

// ModifyPlan plans what only the manifest tells: the ID, the fingerprint
// the object has once applied, and whether another object is named (a
// replacement).
func (r *objectResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	plan, ok := getModel[objectModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	if plan.Manifest.IsUnknown() {
		plan.ID, plan.LiveFingerprint = types.StringUnknown(), types.StringUnknown()
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	u, ref, err := parseManifest(plan.Manifest.ValueString())
	if err != nil {
		return // the validator says why
	}
	plan.LiveFingerprint = types.StringValue(manifestFingerprint(u.Object))
	plan.ID = types.StringUnknown()
	if !plan.WorkspacePath.IsUnknown() {
		plan.ID = types.StringValue(formatObjectID(plan.WorkspacePath.ValueString(), ref))
	}
	if !req.State.Raw.IsNull() {
		state, ok := getModel[objectModel](ctx, req.State, &resp.Diagnostics)
		if !ok {
			return
		}
		if _, old, err := parseManifest(state.Manifest.ValueString()); err == nil && !old.sameObject(ref) {
			resp.RequiresReplace = append(resp.RequiresReplace, path.Root("manifest"))
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *objectResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.write(ctx, req.Plan, timeouts.Value.Create, true, &resp.State, resp.Identity, &resp.Diagnostics)
}

func (r *objectResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.write(ctx, req.Plan, timeouts.Value.Update, false, &resp.State, resp.Identity, &resp.Diagnostics)
}

// write is Create (create) and Update: apply the planned manifest within
// op's timeout and save the result in state.
func (r *objectResource) write(ctx context.Context, from modelSource, op timeoutOp, create bool, state *tfsdk.State, identity *tfsdk.ResourceIdentity, diags *diagnostics) {
	plan, timeout, ok := getTimed[objectModel](ctx, from, op, defaultObjectTimeout, diags)
	if !ok {
		return
	}
	u, ref, err := parseManifest(plan.Manifest.ValueString())
	if err != nil {
		diags.Append(manifestError(path.Root("manifest"), err))
		return
	}
	ws := plan.WorkspacePath.ValueString()
	res, ok := r.resourceFor(ctx, ws, ref, timeout, diags)
	if !ok {
		return
	}
	if create {
		// Apply would take over an object that exists: have it imported
		// instead, as the other resources do.
		_, err := res.Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			diags.AddAttributeError(path.Root("manifest"), "Object already exists",
				fmt.Sprintf("%s already exists in %s. To manage it with Terraform, import it: terraform import <address> %s", ref, ws, formatObjectID(ws, ref)))
			return
		case !apierrors.IsNotFound(err):
			diags.Append(explainObject(ctx, r.conn, ws, "reading "+ref.String(), err))
			return
		}
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		diags.AddAttributeError(path.Root("manifest"), "Cannot encode the manifest", err.Error())
		return
	}
	tflog.Info(ctx, "applying object", map[string]interface{}{"workspace": ws, "object": ref.String()})
	force := true
	live, err := res.Patch(ctx, ref.Name, k8stypes.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	if err != nil {
		diags.Append(explainObject(ctx, r.conn, ws, "applying "+ref.String(), err))
		return
	}
	plan.ID = types.StringValue(formatObjectID(ws, ref))
	plan.UID = types.StringValue(string(live.GetUID()))
	// The plan promised the manifest's fingerprint; one that differs now is
	// a value the API server does not keep as written, which the next plan
	// shows again: say where.
	plan.LiveFingerprint = types.StringValue(manifestFingerprint(u.Object))
	if drifted := driftedPaths(live.Object, u.Object); len(drifted) > 0 {
		diags.AddAttributeWarning(path.Root("manifest"), "Object does not keep what the manifest sets",
			fmt.Sprintf("After apply, %s in %s holds other values than the manifest at %s: the API server (a default, a conversion, "+
				"an admission webhook) changed them. The next plan shows an update again until the manifest says what the object keeps.",
				ref, ws, strings.Join(drifted, ", ")))
	}
	saveState(ctx, state, identity, &plan, objectIdentityOf(ws, ref), diags)
}

// resourceFor finds the resource that serves ref's kind in the workspace,
// waiting within wait for it to be served (a binding made in the same
// apply takes a moment); wait 0 looks once more after reading discovery
// again. It checks that the manifest's namespace suits the type's scope.
func (r *objectResource) resourceFor(ctx context.Context, ws string, ref objectRef, wait time.Duration, diags *diagnostics) (dynamic.ResourceInterface, bool) {
	client, ok := r.conn.dynamicIn(ws, diags)
	if !ok {
		return nil, false
	}
	mapper, err := r.conn.RESTMapper(ws)
	if err != nil {
		diags.Append(explain(r.conn.Host(), "connecting to kcp", err))
		return nil, false
	}
	var mapping *meta.RESTMapping
	find := func(ctx context.Context) (bool, string, error) {
		mapping, err = mapper.RESTMapping(ref.groupKind(), ref.groupVersion().Version)
		if meta.IsNoMatchError(err) {
			mapper.Reset()
			return false, fmt.Sprintf("%s %s is not served", ref.APIVersion, ref.Kind), err
		}
		return err == nil, "", permanentUnlessNil(err)
	}
	if wait > 0 {
		err = waitUntil(ctx, wait, fmt.Sprintf("workspace %s to serve %s %s", ws, ref.APIVersion, ref.Kind), find)
	} else if done, _, _ := find(ctx); !done && meta.IsNoMatchError(err) {
		_, _, _ = find(ctx) // once more, with discovery read again
	}
	switch {
	case meta.IsNoMatchError(err):
		diags.AddAttributeError(path.Root("manifest"), "Kind not served",
			fmt.Sprintf("workspace %s does not serve kind %s in %s: is the API bound there (an APIBinding to the export that serves it), and are apiVersion and kind spelled as the API has them? (%v)",
				ws, ref.Kind, ref.APIVersion, err))
		return nil, false
	case err != nil:
		diags.Append(explainIn(ctx, r.conn, ws, fmt.Sprintf("finding the resource of %s %s in %s", ref.APIVersion, ref.Kind, ws), err))
		return nil, false
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	switch {
	case namespaced && ref.Namespace == "":
		diags.AddAttributeError(path.Root("manifest"), "Namespace missing",
			fmt.Sprintf("%s is namespaced (%s): set metadata.namespace in the manifest.", ref.Kind, mapping.Resource.GroupResource()))
		return nil, false
	case !namespaced && ref.Namespace != "":
		diags.AddAttributeError(path.Root("manifest"), "Namespace set on a cluster-scoped object",
			fmt.Sprintf("%s is cluster-scoped (%s): leave metadata.namespace out of the manifest.", ref.Kind, mapping.Resource.GroupResource()))
		return nil, false
	case namespaced:
		return client.Resource(mapping.Resource).Namespace(ref.Namespace), true
	}
	return client.Resource(mapping.Resource), true
}

// explainObject is explainIn for a request about an object: a refusal by
// an admission webhook is quoted as it is, not taken for missing RBAC.
func explainObject(ctx context.Context, conn *Connection, ws, doing string, err error) diag.Diagnostic {
	if msg := statusMessage(err); apierrors.IsForbidden(err) && strings.Contains(msg, "admission webhook") {
		return diag.NewErrorDiagnostic("Failed "+doing, fmt.Sprintf("%s in %s was refused by an admission webhook: %s", doing, ws, msg))
	}
	return explainIn(ctx, conn, ws, doing, err)
}

func (r *objectResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	state, ok := getModel[objectModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	u, ref, err := parseManifest(state.Manifest.ValueString())
	if err != nil {
		resp.Diagnostics.Append(manifestError(path.Root("manifest"), err))
		return
	}
	ws := state.WorkspacePath.ValueString()
	id := objectIdentityOf(ws, ref)
	if firstMissing(ctx, r.conn, ws) != "" {
		tflog.Warn(ctx, "the workspace of the object is gone; it will be planned for creation", map[string]interface{}{"workspace": ws, "object": ref.String()})
		removeFromState(ctx, resp, id)
		return
	}
	res, ok := r.resourceFor(ctx, ws, ref, 0, &resp.Diagnostics)
	if !ok {
		return
	}
	live, err := res.Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || (err != nil && workspaceGone(ctx, r.conn, ws, err)):
		tflog.Warn(ctx, "object is gone; it will be planned for creation", map[string]interface{}{"workspace": ws, "object": ref.String()})
		removeFromState(ctx, resp, id)
		return
	case err != nil:
		resp.Diagnostics.Append(explainObject(ctx, r.conn, ws, "reading "+ref.String(), err))
		return
	case replacedSince(state, live):
		// Another object of the name, made since: not the one Terraform
		// manages. Adopting it would let destroy delete it; the plan
		// creates the object instead, and create refuses to take over an
		// existing one (it asks for an import).
		tflog.Warn(ctx, "object was replaced by another of the same name; it will be planned for creation",
			map[string]interface{}{"workspace": ws, "object": ref.String(), "uid": state.UID.ValueString(), "live_uid": string(live.GetUID())})
		removeFromState(ctx, resp, id)
		return
	}
	state.setFromLive(ws, ref, u, live)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	setIdentity(ctx, resp.Identity, id, &resp.Diagnostics)
}

// replacedSince reports whether live is another object than the one state
// recorded: a UID known (not an import, which has none yet) and different.
func replacedSince(state objectModel, live *unstructured.Unstructured) bool {
	uid := state.UID.ValueString()
	return uid != "" && uid != string(live.GetUID())
}

// setFromLive records what kcp has of the object: its UID, and the
// fingerprint of its values at the fields manifest sets.
func (m *objectModel) setFromLive(ws string, ref objectRef, manifest, live *unstructured.Unstructured) {
	m.ID = types.StringValue(formatObjectID(ws, ref))
	m.UID = types.StringValue(string(live.GetUID()))
	m.LiveFingerprint = types.StringValue(fingerprintOf(live.Object, manifest.Object))
	if m.WaitForDeletion.IsNull() {
		m.WaitForDeletion = types.BoolValue(true)
	}
}

// ImportState takes <workspace_path>/<apiVersion>/<kind>/<namespace>/<name>
// (parseObjectID), or the identity. The manifest imported holds only what
// names the object; Read fills in the rest of the state.
func (r *objectResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	var ws string
	var ref objectRef
	if byIdentity(req) {
		id, ok := getModel[objectIdentity](ctx, req.Identity, &resp.Diagnostics)
		if !ok {
			return
		}
		ws = id.WorkspacePath.ValueString()
		ref = objectRef{APIVersion: id.APIVersion.ValueString(), Kind: id.Kind.ValueString(), Namespace: id.Namespace.ValueString(), Name: id.Name.ValueString()}
		if problem := objectRefProblem(ws, ref); problem != "" {
			resp.Diagnostics.AddError("Invalid import identity", fmt.Sprintf("the identity does not name an object: %s. It takes workspace_path "+
				"(such as root:team-a), api_version (such as network.example.io/v1), kind, name, and namespace for a namespaced object.", problem))
			return
		}
	} else {
		var err error
		if ws, ref, err = parseObjectID(req.ID); err != nil {
			resp.Diagnostics.AddError("Invalid import ID", err.Error())
			return
		}
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), formatObjectID(ws, ref))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("workspace_path"), ws)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("manifest"), minimalManifest(ref))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("wait_for_deletion"), true)...)
	setIdentity(ctx, resp.Identity, objectIdentityOf(ws, ref), &resp.Diagnostics)
}
