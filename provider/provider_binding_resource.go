package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

var (
	_ identifiedResource              = &providerBindingResource{}
	_ resource.ResourceWithModifyPlan = &providerBindingResource{}
)

const (
	defaultBindingName    = "dep-ctrl"
	defaultBindingTimeout = 2 * time.Minute
)

// NewProviderBindingResource returns the depctrl_provider_binding resource.
func NewProviderBindingResource() resource.Resource {
	return &providerBindingResource{resourceType{name: "provider_binding"}}
}

type providerBindingResource struct{ resourceType }

type providerBindingModel struct {
	workspaceObjectModel
	ExportPath       types.String `tfsdk:"export_path"`
	ExportName       types.String `tfsdk:"export_name"`
	PermissionClaims types.List   `tfsdk:"permission_claims"`
	Phase            types.String `tfsdk:"phase"`
	BoundResources   types.List   `tfsdk:"bound_resources"`
	timed
}

func (r *providerBindingResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Binds the dep-ctrl export in an API provider's workspace and accepts its permission claims: on " +
			"`validatingwebhookconfigurations`, so that the controller can install the deletion webhook there; on " +
			"`mutatingwebhookconfigurations`, so that the controller can install the reference index webhook next to the rules " +
			"(without it deletes are still checked, by reading every dependent, and the rules there report `Indexed` false); on creating " +
			"Events, so that it can report on the DependencyRules created there; and `get` on `apiexports` and `apiresourceschemas`, " +
			"read-only, so that the controller can check that the types a rule names are served by the exports it names (without it " +
			"the rules that name an export here are not `Ready`: their `TypesServed` condition says `ClaimNotAccepted`). " +
			"Every provider workspace whose objects are protected, or that hosts rules, needs one. " +
			"Apply waits until the binding is `Bound`.\n\n" +
			"Destroy the rules in a workspace before its binding (Terraform does when they reference the binding): without the binding, " +
			"the workspace no longer serves the rule API. The controller removes its webhook configurations as the rules go, and " +
			"each rule's destroy waits for that; any still there when the binding goes (the runtime was not running, or rules in " +
			"other workspaces still protect types exported here) are removed with the binding, with a warning, since nothing could " +
			"remove them later and they would keep refusing deletes of protected objects and writes of dependents.",
		Attributes: map[string]schema.Attribute{
			"id":                importIDAttribute(workspaceObjectIDDoc),
			"workspace_path":    workspacePathAttribute("The path of the API provider's workspace, such as `root:org:network`."),
			"name":              nameAttribute(defaultBindingName, "The APIBinding name.", objectNameValidator("must be a lowercase DNS subdomain such as dep-ctrl")),
			"export_path":       workspacePathAttribute("The path of the dep-ctrl workspace that hosts the export (`depctrl_export.workspace_path`)."),
			"export_name":       nameAttribute(v1alpha1.DefaultAPIExportName, "The APIExport name (`depctrl_export.name`).", objectNameValidator("must be a lowercase DNS subdomain")),
			"permission_claims": computedList("The claims the binding decides, as `group/resource: verbs = state`. The dep-ctrl claim is always `Accepted`; a claim rejected or removed outside Terraform is restored by the next apply."),
			"phase": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The binding phase; `Bound` after apply.",
			},
			"bound_resources": computedList("The resources the binding makes available, as `resource.group`."),
		},
		Blocks: timeoutsOnly(ctx, "the {op} of the binding", sameTimeouts(defaultBindingTimeout)),
	}
	documentSchema(ctx, &resp.Schema)
}

func (r *providerBindingResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = workspaceObjectIdentitySchema(
		"The path of the API provider's workspace that holds the binding, such as `root:org:network`.",
		"The APIBinding name, such as `"+defaultBindingName+"`.")
}

// desiredBinding is the APIBinding for m, with every claim of the bundled
// export accepted for all objects.
func (m *providerBindingModel) desiredBinding() *apisv1alpha2.APIBinding {
	b := &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: m.Name.ValueString()},
		Spec: apisv1alpha2.APIBindingSpec{
			Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{
				Path: m.ExportPath.ValueString(),
				Name: m.ExportName.ValueString(),
			}},
		},
	}
	for _, c := range v1alpha1.APIExport("").Spec.PermissionClaims {
		b.Spec.PermissionClaims = append(b.Spec.PermissionClaims, apisv1alpha2.AcceptablePermissionClaim{
			ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{
				PermissionClaim: c,
				Selector:        apisv1alpha2.PermissionClaimSelector{MatchAll: true},
			},
			State: apisv1alpha2.ClaimAccepted,
		})
	}
	return b
}

func bindingClaimStrings(claims []apisv1alpha2.AcceptablePermissionClaim) []string {
	out := make([]string, 0, len(claims))
	for _, c := range claims {
		out = append(out, fmt.Sprintf("%s = %s", claimString(c.PermissionClaim), c.State))
	}
	sort.Strings(out)
	return out
}

func (r *providerBindingResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	plan, ok := getModel[providerBindingModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	plan.PermissionClaims = stringList(bindingClaimStrings(plan.desiredBinding().Spec.PermissionClaims))
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *providerBindingResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.write(ctx, req.Plan, timeouts.Value.Create, &resp.State, resp.Identity, &resp.Diagnostics)
}

func (r *providerBindingResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.write(ctx, req.Plan, timeouts.Value.Update, &resp.State, resp.Identity, &resp.Diagnostics)
}

// write is Create and Update: apply the planned binding within op's
// timeout and save it in state.
func (r *providerBindingResource) write(ctx context.Context, from modelSource, op timeoutOp, state *tfsdk.State, identity *tfsdk.ResourceIdentity, diags *diagnostics) {
	plan, timeout, ok := getTimed[providerBindingModel](ctx, from, op, defaultBindingTimeout, diags)
	if !ok {
		return
	}
	r.apply(ctx, &plan, timeout, diags)
	saveState(ctx, state, identity, &plan, plan.identity(), diags)
}

func (r *providerBindingResource) apply(ctx context.Context, m *providerBindingModel, timeout time.Duration, diags *diagnostics) {
	ws := m.WorkspacePath.ValueString()
	client, ok := r.conn.dynamicIn(ws, diags)
	if !ok {
		return
	}
	b := m.desiredBinding()
	ref := b.Spec.Reference.Export.Path + ":" + b.Spec.Reference.Export.Name
	tflog.Info(ctx, "binding the dep-ctrl export", map[string]interface{}{"workspace": ws, "export": ref})
	// A binding of the same name that is still being deleted cannot be
	// applied to; wait until it is gone.
	err := waitUntil(ctx, timeout, fmt.Sprintf("the previous APIBinding %q in %s to be deleted", b.Name, ws), func(ctx context.Context) (bool, string, error) {
		var existing apisv1alpha2.APIBinding
		found, err := getObject(ctx, client, apiBindingsGVR, b.Name, &existing)
		if err != nil {
			return false, "", err
		}
		return !found || existing.DeletionTimestamp == nil, "being deleted", nil
	})
	if err != nil {
		diags.Append(explainIn(ctx, r.conn, ws, fmt.Sprintf("binding %s in %s", ref, ws), err))
		return
	}
	if err := r.bind(ctx, client, b, timeout); err != nil {
		// kcp refuses a binding to an export that does not exist as if
		// it were a permission problem; say which it is.
		if apierrors.IsForbidden(err) {
			if missing := r.missingExport(ctx, b.Spec.Reference.Export); missing != "" {
				diags.AddAttributeError(path.Root("export_name"), "APIExport not found", missing)
				return
			}
		}
		diags.Append(explainIn(ctx, r.conn, ws, fmt.Sprintf("binding %s in %s", ref, ws), err))
		return
	}
	changed, stopWatch := wakeOnChange(ctx, client.Resource(apiBindingsGVR), b.Name)
	defer stopWatch()
	err = waitUntilWoken(ctx, timeout, fmt.Sprintf("APIBinding %q in %s to be Bound", b.Name, ws), changed, func(ctx context.Context) (bool, string, error) {
		found, state, err := r.read(ctx, client, m)
		if err != nil || !found {
			return false, state, err
		}
		return m.Phase.ValueString() == string(apisv1alpha2.APIBindingPhaseBound), state, nil
	})
	if err != nil {
		diags.AddAttributeError(path.Root("export_path"), "APIBinding not bound", err.Error())
		return
	}
	m.ID = types.StringValue(ws + "/" + b.Name)
}

// bindPermissionGrace is how long a refusal to bind an export that exists
// is retried. kcp authorizes a binding against the RBAC of the export's
// workspace through caches that trail a just-created workspace or export
// by a moment; a refusal that lasts longer is a real permission problem.
const bindPermissionGrace = 30 * time.Second

// bind writes the binding, retrying a refusal while the export exists and
// the grace period lasts.
func (r *providerBindingResource) bind(ctx context.Context, client dynamic.Interface, b *apisv1alpha2.APIBinding, timeout time.Duration) error {
	deadline := time.Now().Add(min(bindPermissionGrace, timeout))
	for {
		err := applyObjects(ctx, client, object{apiBindingsGVR, b})
		if err == nil || !apierrors.IsForbidden(err) || time.Now().After(deadline) || r.missingExport(ctx, b.Spec.Reference.Export) != "" {
			return err
		}
		tflog.Debug(ctx, "binding refused; kcp may not have caught up with the export's RBAC yet, retrying", map[string]interface{}{"error": err.Error()})
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// missingExport says why the export ref names nothing, or "" when it
// exists or cannot be checked.
func (r *providerBindingResource) missingExport(ctx context.Context, ref *apisv1alpha2.ExportBindingReference) string {
	client, err := r.conn.Dynamic(ref.Path)
	if err != nil {
		return ""
	}
	_, err = client.Resource(apiExportsGVR).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("there is no APIExport %q in workspace %q: create it with depctrl_export, and reference that resource so that it exists first", ref.Name, ref.Path)
	case workspaceGone(ctx, r.conn, ref.Path, err):
		return fmt.Sprintf("the export's workspace %q does not exist", ref.Path)
	}
	return ""
}

// read fills m from kcp and describes the binding's conditions for error
// messages; found is false when the APIBinding is gone.
func (r *providerBindingResource) read(ctx context.Context, client dynamic.Interface, m *providerBindingModel) (found bool, state string, err error) {
	var b apisv1alpha2.APIBinding
	found, err = getObject(ctx, client, apiBindingsGVR, m.Name.ValueString(), &b)
	if err != nil || !found {
		return found, "", err
	}
	if b.DeletionTimestamp != nil {
		// Going away: plan it as missing, and Create waits for it to go.
		return false, "being deleted", nil
	}
	if e := b.Spec.Reference.Export; e != nil {
		m.ExportPath = types.StringValue(e.Path)
		m.ExportName = types.StringValue(e.Name)
	}
	m.PermissionClaims = stringList(bindingClaimStrings(b.Spec.PermissionClaims))
	m.Phase = types.StringValue(string(b.Status.Phase))
	var bound []string
	for _, res := range b.Status.BoundResources {
		bound = append(bound, strings.TrimSuffix(res.Resource+"."+res.Group, "."))
	}
	sort.Strings(bound)
	m.BoundResources = stringList(bound)

	state = "phase " + string(b.Status.Phase)
	for _, c := range b.Status.Conditions {
		if c.Status != "True" && c.Message != "" {
			state += fmt.Sprintf(", %s: %s", c.Type, c.Message)
		}
	}
	return true, state, nil
}

func (r *providerBindingResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	state, ok := getModel[providerBindingModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	readWorkspaceObject(ctx, r.conn, resp, &state, state.identity(), "APIBinding", "reading the dep-ctrl binding", func(client dynamic.Interface) (bool, error) {
		found, _, err := r.read(ctx, client, &state)
		return found, err
	})
}

func (r *providerBindingResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, timeout, ok := getTimed[providerBindingModel](ctx, req.State, timeouts.Value.Delete, defaultBindingTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	ws := state.WorkspacePath.ValueString()
	client, ok := r.conn.dynamicIn(ws, &resp.Diagnostics)
	if !ok {
		return
	}
	tflog.Info(ctx, "removing the dep-ctrl binding", map[string]interface{}{"workspace": ws})
	if err := deleteObjects(ctx, client, timeout, object{apiBindingsGVR, state.desiredBinding()}); err != nil {
		if workspaceGone(ctx, r.conn, ws, err) {
			return
		}
		resp.Diagnostics.Append(explainIn(ctx, r.conn, ws, "removing the dep-ctrl binding", err))
		return
	}
	left, err := removeLeftoverConfigurations(ctx, client)
	if apierrors.IsForbidden(err) {
		// The binding is gone, which is what was asked; say what could
		// not be checked rather than fail the destroy.
		resp.Diagnostics.AddWarning("Could not check for webhook configurations left behind",
			fmt.Sprintf("Terraform's credentials may not read or delete webhook configurations in %q (%v). If the runtime was not running "+
				"while the rules were deleted, remove the controller's leftovers there: "+
				"kubectl delete validatingwebhookconfigurations,mutatingwebhookconfigurations -l %s=%s", ws, err, v1alpha1.ManagedByLabel, v1alpha1.WebhookConfigurationManager))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(explainIn(ctx, r.conn, ws, "removing webhook configurations the controller left behind", err))
		return
	}
	if len(left) > 0 {
		resp.Diagnostics.AddWarning("Removed webhook configurations the controller left behind",
			fmt.Sprintf("Workspace %q still held %s when its binding was deleted; the controller removes them itself when it runs "+
				"while the rules are deleted, and each rule's destroy waits for that. Left in place they would have failed closed with "+
				"nobody answering: deletes of the protected types and writes of the dependent types refused for every consumer. "+
				"Was the runtime running while the rules were deleted, and were the rules of other workspaces that protect types "+
				"exported here deleted before this binding?", ws, strings.Join(left, " and ")))
	}
}

// removeLeftoverConfigurations deletes the controller's webhook
// configurations from a workspace that no longer binds the export. The
// controller removes them as the rules go, but only while it runs and
// holds the claims; once the binding is gone nothing else would, and they
// fail closed. Only objects labelled as the controller's are touched.
func removeLeftoverConfigurations(ctx context.Context, client dynamic.Interface) ([]string, error) {
	var removed []string
	for _, gvr := range webhookConfigurationGVRs {
		res := client.Resource(gvr)
		u, err := res.Get(ctx, v1alpha1.WebhookConfigurationName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return removed, fmt.Errorf("reading %s %s: %w", gvr.Resource, v1alpha1.WebhookConfigurationName, err)
		}
		if u.GetLabels()[v1alpha1.ManagedByLabel] != v1alpha1.WebhookConfigurationManager {
			continue
		}
		err = res.Delete(ctx, v1alpha1.WebhookConfigurationName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(u.GetUID())}})
		if err != nil && !apierrors.IsNotFound(err) {
			return removed, fmt.Errorf("deleting %s %s: %w", gvr.Resource, v1alpha1.WebhookConfigurationName, err)
		}
		if err == nil {
			removed = append(removed, fmt.Sprintf("%s %s", gvr.Resource, v1alpha1.WebhookConfigurationName))
			tflog.Warn(ctx, "removed a webhook configuration the controller left behind", map[string]interface{}{"resource": gvr.Resource})
		}
	}
	return removed, nil
}

// ImportState takes <workspace path>/<binding name>, or the identity.
func (r *providerBindingResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importWorkspaceObject(ctx, req, resp, "binding", "root:org:network/"+defaultBindingName)
}
