package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// fieldManager owns the fields the provider applies. Server-side apply
// with this manager means that fields other controllers add (status,
// defaults, kcp's annotations) never conflict with or show up as drift.
const fieldManager = "terraform-provider-depctrl"

// Resources the provider manages.
var (
	clusterRolesGVR        = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	clusterRoleBindingsGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	apiResourceSchemasGVR  = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiresourceschemas"}
	apiExportsGVR          = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apiexports"}
	apiBindingsGVR         = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apibindings"}
	endpointSlicesGVR      = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiexportendpointslices"}
	logicalClustersGVR     = schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "logicalclusters"}
	// The kinds of webhook configuration the controller installs where its
	// export is bound, which the provider removes if it left them behind.
	webhookConfigurationGVRs = []schema.GroupVersionResource{
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
	}
)

// object is one Kubernetes object in one workspace.
type object struct {
	GVR schema.GroupVersionResource
	Obj runtime.Object
}

func (o object) name() string {
	if m, ok := o.Obj.(metav1.Object); ok {
		return m.GetName()
	}
	return ""
}

func (o object) String() string { return o.GVR.Resource + "/" + o.name() }

// apply server-side applies objs in the workspace at clusterPath, in order.
// Force takes ownership of fields someone changed by hand: that is how
// apply repairs drift.
func applyObjects(ctx context.Context, d dynamic.Interface, objs ...object) error {
	for _, o := range objs {
		u, err := toUnstructured(o.Obj)
		if err != nil {
			return err
		}
		data, err := json.Marshal(u)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", o, err)
		}
		force := true
		if _, err := d.Resource(o.GVR).Patch(ctx, o.name(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
			return fmt.Errorf("applying %s: %w", o, err)
		}
	}
	return nil
}

// deleteObjects deletes objs in reverse order, ignoring those already gone,
// and waits until they are gone.
func deleteObjects(ctx context.Context, d dynamic.Interface, timeout time.Duration, objs ...object) error {
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		err := d.Resource(o.GVR).Delete(ctx, o.name(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", o, err)
		}
	}
	for _, o := range objs {
		err := waitGone(ctx, timeout, o.String(), func(ctx context.Context) error {
			_, err := d.Resource(o.GVR).Get(ctx, o.name(), metav1.GetOptions{})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// getObject reads one object; found is false when it does not exist.
func getObject(ctx context.Context, d dynamic.Interface, gvr schema.GroupVersionResource, name string, into interface{}) (found bool, err error) {
	u, err := d.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s/%s: %w", gvr.Resource, name, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return false, fmt.Errorf("decoding %s/%s: %w", gvr.Resource, name, err)
	}
	return true, nil
}

func toUnstructured(obj runtime.Object) (map[string]interface{}, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	// Fields the server owns must not be part of an apply configuration.
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "status")
	return m, nil
}

// importWorkspaceObject imports an object named by <workspace path>/<name>,
// the ID of every resource that lives in one workspace, or by the identity
// {workspace_path, name} (workspaceObjectIdentity); example is a valid ID
// for the error message.
func importWorkspaceObject(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse, kind, example string) {
	var ws, name string
	if byIdentity(req) {
		id, ok := getModel[workspaceObjectIdentity](ctx, req.Identity, &resp.Diagnostics)
		if !ok {
			return
		}
		ws, name = id.WorkspacePath.ValueString(), id.Name.ValueString()
		if !validWorkspacePath(ws) || !validObjectName(name) {
			e, _, _ := strings.Cut(example, "/")
			resp.Diagnostics.AddError("Invalid import identity",
				fmt.Sprintf("workspace_path %q and name %q do not name a %s: workspace_path is a workspace path such as %s, and name the %s's name",
					ws, name, kind, e, kind))
			return
		}
	} else {
		var ok bool
		ws, name, ok = strings.Cut(req.ID, "/")
		if !ok || !validWorkspacePath(ws) || !validObjectName(name) {
			resp.Diagnostics.AddError("Invalid import ID",
				fmt.Sprintf("%q is not <workspace path>/<%s name>, such as %s", req.ID, kind, example))
			return
		}
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ws+"/"+name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("workspace_path"), ws)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
	setIdentity(ctx, resp.Identity, workspaceObjectIdentityOf(ws, name), &resp.Diagnostics)
}

// readWorkspaceObject is the Read of a resource that manages one named
// object in one workspace, id: read fills model from kcp through the
// workspace's client and reports whether the object is there. When the
// object or its workspace is gone, the resource leaves the state, to be
// planned for creation; otherwise model and id are saved. kind names the
// object for the log ("APIExport"), doing the read for an error message.
func readWorkspaceObject(ctx context.Context, conn *Connection, resp *resource.ReadResponse, model any, id workspaceObjectIdentity, kind, doing string, read func(dynamic.Interface) (bool, error)) {
	ws := id.WorkspacePath.ValueString()
	client, ok := conn.dynamicIn(ws, &resp.Diagnostics)
	if !ok {
		return
	}
	found, err := read(client)
	switch {
	case err != nil && workspaceGone(ctx, conn, ws, err):
		removeFromState(ctx, resp, id)
	case err != nil:
		resp.Diagnostics.Append(explainIn(ctx, conn, ws, doing, err))
	case !found:
		tflog.Warn(ctx, kind+" is gone; it will be planned for creation", map[string]interface{}{"workspace": ws, "name": id.Name.ValueString()})
		removeFromState(ctx, resp, id)
	default:
		resp.Diagnostics.Append(resp.State.Set(ctx, model)...)
		setIdentity(ctx, resp.Identity, id, &resp.Diagnostics)
	}
}
