package provider

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

const vpcYAML = `apiVersion: network.example.io/v1
kind: VPC
metadata:
  name: vpc-1
  namespace: apps
spec:
  cidr: 10.0.0.0/16
`

// TestParseManifest: a manifest is exactly one object with apiVersion, kind
// and metadata.name that apply can write; anything else is refused with a
// reason that says what is wrong.
func TestParseManifest(t *testing.T) {
	for _, tt := range []struct {
		name     string
		manifest string
		want     objectRef
		err      string
	}{
		{name: "YAML", manifest: vpcYAML, want: objectRef{APIVersion: "network.example.io/v1", Kind: "VPC", Namespace: "apps", Name: "vpc-1"}},
		{name: "JSON", manifest: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"apps"}}`, want: objectRef{APIVersion: "v1", Kind: "Namespace", Name: "apps"}},
		{name: "document markers and comments", manifest: "# a VPC\n---\n" + vpcYAML + "---\n# nothing more\n", want: objectRef{APIVersion: "network.example.io/v1", Kind: "VPC", Namespace: "apps", Name: "vpc-1"}},
		{name: "RBAC name with a colon", manifest: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"team:reader"}}`,
			want: objectRef{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "team:reader"}},
		{name: "empty", manifest: "", err: "it is empty"},
		{name: "only comments", manifest: "# nothing\n---\n", err: "it is empty"},
		{name: "a list", manifest: "- a\n- b\n", err: "it is a list, not an object"},
		{name: "a string", manifest: `"vpc"`, err: "it is a string, not an object"},
		{name: "several documents", manifest: vpcYAML + "---\n" + vpcYAML, err: "it holds 2 YAML documents"},
		{name: "a List kind", manifest: `{"apiVersion":"v1","kind":"List","metadata":{"name":"x"},"items":[]}`, err: "a list of objects"},
		{name: "bad YAML", manifest: "apiVersion: v1\nkind: [Namespace\n", err: "cannot read it as YAML or JSON"},
		{name: "no apiVersion", manifest: "kind: VPC\nmetadata:\n  name: vpc-1\n", err: "it has no apiVersion"},
		{name: "bad apiVersion", manifest: "apiVersion: a/b/c\nkind: VPC\nmetadata:\n  name: vpc-1\n", err: "its apiVersion \"a/b/c\" is not <group>/<version>"},
		{name: "no kind", manifest: "apiVersion: v1\nmetadata:\n  name: x\n", err: "it has no kind"},
		{name: "kind not a string", manifest: "apiVersion: v1\nkind: 3\nmetadata:\n  name: x\n", err: "its kind is a number, not a string"},
		{name: "no metadata", manifest: "apiVersion: v1\nkind: Namespace\n", err: "it has no metadata"},
		{name: "no name", manifest: "apiVersion: v1\nkind: Namespace\nmetadata:\n  labels: {a: b}\n", err: "it has no metadata.name"},
		{name: "empty name", manifest: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: \"\"\n", err: "its metadata.name is empty"},
		{name: "name with a slash", manifest: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a/b\n", err: "cannot name an object"},
		{name: "bad namespace", manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: Apps\n", err: "is not a namespace name"},
		{name: "status", manifest: vpcYAML + "status:\n  phase: Ready\n", err: "it sets status"},
		{name: "server metadata", manifest: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  resourceVersion: \"7\"\n", err: "metadata.resourceVersion, which the API server sets"},
		{name: "the deferral record", manifest: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  annotations:\n    " + v1alpha1.DeletionDeferredAnnotation + ": \"{}\"\n",
			err: "only the dependency webhook writes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ref, err := parseManifest(tt.manifest)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("parseManifest: %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil || ref != tt.want {
				t.Fatalf("parseManifest = %+v, %v; want %+v", ref, err, tt.want)
			}
		})
	}
}

// TestManifestValidator: a bad manifest fails the plan on the manifest
// attribute, saying why; an unknown one waits for apply.
func TestManifestValidator(t *testing.T) {
	ctx := context.Background()
	validate := func(v types.String) *validator.StringResponse {
		resp := &validator.StringResponse{}
		manifestValidator{}.ValidateString(ctx, validator.StringRequest{Path: path.Root("manifest"), ConfigValue: v}, resp)
		return resp
	}
	resp := validate(types.StringValue("apiVersion: v1\nkind: Namespace\n"))
	if !resp.Diagnostics.HasError() {
		t.Fatal("a manifest without metadata passed")
	}
	d := resp.Diagnostics.Errors()[0]
	withPath, ok := d.(interface{ Path() path.Path })
	if !ok || !withPath.Path().Equal(path.Root("manifest")) || !strings.Contains(d.Detail(), "manifest: it has no metadata") {
		t.Errorf("diagnostic %q: %q does not name the manifest attribute and the problem", d.Summary(), d.Detail())
	}
	for _, v := range []types.String{types.StringValue(vpcYAML), types.StringUnknown(), types.StringNull()} {
		if resp := validate(v); resp.Diagnostics.HasError() {
			t.Errorf("%v refused: %v", v, resp.Diagnostics)
		}
	}
}

// TestObjectModifyPlan: the plan expects the manifest's fingerprint and
// its ID; a changed group, kind, namespace or name replaces the resource,
// a changed version or spec updates it in place.
func TestObjectModifyPlan(t *testing.T) {
	ctx := context.Background()
	r := NewObjectResource().(*objectResource)
	var sr fwresource.SchemaResponse
	r.Schema(ctx, fwresource.SchemaRequest{}, &sr)
	timeoutsType := map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType}
	model := func(manifest string) objectModel {
		return objectModel{ID: types.StringUnknown(), WorkspacePath: types.StringValue("root:team-a"), Manifest: types.StringValue(manifest),
			WaitForDeletion: types.BoolValue(true), UID: types.StringUnknown(), LiveFingerprint: types.StringUnknown(),
			timed: timed{Timeouts: timeouts.Value{Object: types.ObjectNull(timeoutsType)}}}
	}
	raw := func(m *objectModel) tftypes.Value {
		st := tfsdk.State{Schema: sr.Schema, Raw: tftypes.NewValue(sr.Schema.Type().TerraformType(ctx), nil)}
		if m != nil {
			if d := st.Set(ctx, m); d.HasError() {
				t.Fatal(d)
			}
		}
		return st.Raw
	}
	vpc := func(edit func(string) string) string { return edit(vpcYAML) }
	same := func(s string) string { return s }
	for _, tt := range []struct {
		name    string
		edit    func(string) string
		replace bool
	}{
		{"unchanged", same, false},
		{"spec", func(s string) string { return strings.Replace(s, "10.0.0.0/16", "10.1.0.0/16", 1) }, false},
		{"version", func(s string) string { return strings.Replace(s, "/v1", "/v2", 1) }, false},
		{"group", func(s string) string { return strings.Replace(s, "network.example.io", "net.example.io", 1) }, true},
		{"kind", func(s string) string { return strings.Replace(s, "kind: VPC", "kind: Network", 1) }, true},
		{"name", func(s string) string { return strings.Replace(s, "name: vpc-1", "name: vpc-2", 1) }, true},
		{"namespace", func(s string) string { return strings.Replace(s, "namespace: apps", "namespace: other", 1) }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prior := model(vpcYAML)
			prior.ID, prior.UID, prior.LiveFingerprint = types.StringValue("x"), types.StringValue("uid-1"), types.StringValue("sha256:live")
			planned := model(vpc(tt.edit))
			req := fwresource.ModifyPlanRequest{
				State: tfsdk.State{Schema: sr.Schema, Raw: raw(&prior)},
				Plan:  tfsdk.Plan{Schema: sr.Schema, Raw: raw(&planned)},
			}
			resp := &fwresource.ModifyPlanResponse{Plan: req.Plan}
			r.ModifyPlan(ctx, req, resp)
			if resp.Diagnostics.HasError() {
				t.Fatal(resp.Diagnostics)
			}
			if got := len(resp.RequiresReplace) > 0; got != tt.replace {
				t.Errorf("replace = %v (%v), want %v", got, resp.RequiresReplace, tt.replace)
			}
			var got objectModel
			resp.Plan.Get(ctx, &got)
			u, ref, _ := parseManifest(vpc(tt.edit))
			if want := manifestFingerprint(u.Object); got.LiveFingerprint.ValueString() != want {
				t.Errorf("planned live_fingerprint %s, want %s", got.LiveFingerprint, want)
			}
			if want := formatObjectID("root:team-a", ref); got.ID.ValueString() != want {
				t.Errorf("planned id %s, want %s", got.ID, want)
			}
		})
	}
	t.Run("unknown manifest", func(t *testing.T) {
		planned := model("")
		planned.Manifest = types.StringUnknown()
		req := fwresource.ModifyPlanRequest{State: tfsdk.State{Schema: sr.Schema, Raw: raw(nil)}, Plan: tfsdk.Plan{Schema: sr.Schema, Raw: raw(&planned)}}
		resp := &fwresource.ModifyPlanResponse{Plan: req.Plan}
		r.ModifyPlan(ctx, req, resp)
		var got objectModel
		resp.Plan.Get(ctx, &got)
		if resp.Diagnostics.HasError() || !got.LiveFingerprint.IsUnknown() || !got.ID.IsUnknown() {
			t.Errorf("with the manifest unknown: %v, fingerprint %s, id %s", resp.Diagnostics, got.LiveFingerprint, got.ID)
		}
	})
}

// TestFingerprint: the fingerprint digests exactly the fields the manifest
// sets, so equal values match however the numbers are typed, a hand edit
// of a set field differs, and whatever the manifest does not set (server
// defaults, status, other labels and annotations) never counts.
func TestFingerprint(t *testing.T) {
	manifest := map[string]interface{}{
		"apiVersion": "network.example.io/v1", "kind": "VPC",
		"metadata": map[string]interface{}{"name": "vpc-1", "namespace": "apps", "labels": map[string]interface{}{"tier": "network"}, "annotations": map[string]interface{}{}},
		"spec":     map[string]interface{}{"cidr": "10.0.0.0/16", "mtu": float64(1500), "zones": []interface{}{"a", "b"}, "public": false},
	}
	live := func(edit func(u *unstructured.Unstructured)) map[string]interface{} {
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "network.example.io/v1", "kind": "VPC",
			"metadata": map[string]interface{}{"name": "vpc-1", "namespace": "apps", "uid": "u-1", "resourceVersion": "7",
				"labels": map[string]interface{}{"tier": "network"}},
			"spec":   map[string]interface{}{"cidr": "10.0.0.0/16", "mtu": int64(1500), "zones": []interface{}{"a", "b"}},
			"status": map[string]interface{}{"phase": "Ready"},
		}}
		edit(u)
		return u.Object
	}
	want := manifestFingerprint(manifest)
	if !strings.HasPrefix(want, "sha256:") || len(want) != len("sha256:")+64 {
		t.Fatalf("fingerprint %q is not sha256:<hex>", want)
	}
	for _, tt := range []struct {
		name    string
		edit    func(u *unstructured.Unstructured)
		same    bool
		drifted string
	}{
		{name: "as applied", edit: func(*unstructured.Unstructured) {}, same: true},
		{name: "other annotations and labels", same: true, edit: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"kcp.io/cluster": "2x8ab", v1alpha1.DeletionDeferredAnnotation: "{}"})
			u.SetLabels(map[string]string{"tier": "network", "ref.dependencies.opendefense.cloud/x": "y"})
		}},
		{name: "fields the manifest does not set", same: true, edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "default", "spec", "mode")
			_ = unstructured.SetNestedField(u.Object, "Failed", "status", "phase")
		}},
		{name: "a set field edited", drifted: ".spec.cidr", edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "10.9.0.0/16", "spec", "cidr")
		}},
		{name: "a set number edited", drifted: ".spec.mtu", edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(9000), "spec", "mtu")
		}},
		{name: "a set label edited", drifted: ".metadata.labels.tier", edit: func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"tier": "compute"})
		}},
		{name: "a set field removed", drifted: ".spec.cidr", edit: func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "cidr")
		}},
		{name: "a list element added", drifted: ".spec.zones", edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []interface{}{"a", "b", "c"}, "spec", "zones")
		}},
		{name: "a false field set", drifted: ".spec.public", edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, true, "spec", "public")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obj := live(tt.edit)
			got := fingerprintOf(obj, manifest)
			if (got == want) != tt.same {
				t.Errorf("fingerprint %s, manifest's %s: want equal %v", got, want, tt.same)
			}
			drifted := driftedPaths(obj, manifest)
			if tt.same && len(drifted) > 0 || !tt.same && (len(drifted) != 1 || drifted[0] != tt.drifted) {
				t.Errorf("drifted paths %v, want [%s]", drifted, tt.drifted)
			}
		})
	}
}

// TestObjectID: the import ID round-trips, with a named group (six parts)
// and the core group (five), namespaced and cluster-scoped; anything else is
// refused saying what the ID is.
func TestObjectID(t *testing.T) {
	for _, tt := range []struct {
		id  string
		ws  string
		ref objectRef
	}{
		{"root:team-a/network.example.io/v1/VPC/apps/vpc-1", "root:team-a", objectRef{APIVersion: "network.example.io/v1", Kind: "VPC", Namespace: "apps", Name: "vpc-1"}},
		{"root:team-a/v1/ConfigMap/apps/settings", "root:team-a", objectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "settings"}},
		{"root:team-a/v1/Namespace//apps", "root:team-a", objectRef{APIVersion: "v1", Kind: "Namespace", Name: "apps"}},
		{"root:org:team/rbac.authorization.k8s.io/v1/ClusterRole//team:reader", "root:org:team", objectRef{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "team:reader"}},
	} {
		ws, ref, err := parseObjectID(tt.id)
		if err != nil || ws != tt.ws || ref != tt.ref {
			t.Errorf("parseObjectID(%q) = %q, %+v, %v; want %q, %+v", tt.id, ws, ref, err, tt.ws, tt.ref)
		}
		if got := formatObjectID(tt.ws, tt.ref); got != tt.id {
			t.Errorf("formatObjectID = %q, want %q", got, tt.id)
		}
		// The minimal manifest of an import names the same object.
		if _, back, err := parseManifest(minimalManifest(tt.ref)); err != nil || back != tt.ref {
			t.Errorf("minimalManifest(%+v) reads back as %+v, %v", tt.ref, back, err)
		}
	}
	for _, tt := range []struct{ id, err string }{
		{"root:team-a/VPC/vpc-1", "is not <workspace_path>/<apiVersion>/<kind>/<namespace>/<name>"},
		{"root:team-a/a/b/c/VPC/apps/vpc-1", "is not <workspace_path>"},
		{"team-a/v1/Namespace//apps", "the workspace path \"team-a\" is not a workspace path"},
		{"root:team-a/v1//apps/x", "the kind is empty"},
		{"root:team-a/v1/ConfigMap/apps/", "the metadata.name is empty"},
		{"root:team-a/v1/ConfigMap/Apps/x", "is not a namespace name"},
	} {
		if _, _, err := parseObjectID(tt.id); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("parseObjectID(%q): %v, want an error containing %q", tt.id, err, tt.err)
		}
	}
}

var vpcsGVR = schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}

// webhookDenial is the deletion webhook's refusal of a DELETE, as kcp
// returns it: 403, the webhook's message, and each blocker as a cause.
func webhookDenial(message string) error {
	vm := v1alpha1.DependentRef{Workspace: "2x8ab", Group: "compute.test.io", Version: "v1", Resource: "virtualmachines", Kind: "VirtualMachine", Namespace: "apps", Name: "vm-1"}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `admission webhook "deletion-protection.dependencies.opendefense.cloud" denied the request: ` + message,
		Details: &metav1.StatusDetails{Name: "vpc-1", Group: "network.test.io", Kind: "vpcs", Causes: []metav1.StatusCause{v1alpha1.DependentCause(vm, false)}},
	}}
}

const (
	deferredMessage = "cannot delete vpcs/vpc-1: still referenced by VirtualMachine/vm-1; its deletion is deferred (asked by admin at " +
		"2026-11-29T08:00:00Z): depctrl deletes it once nothing references it (remove the annotation dependencies.opendefense.cloud/deletion-deferred to cancel)"
	// The words of a webhook of an earlier release.
	deferredAlreadyMessage = "cannot delete vpcs/vpc-1: still referenced by VirtualMachine/vm-1; its deletion is deferred already (asked by admin at " +
		"2026-11-29T08:00:00Z): depctrl deletes it once nothing references it"
	refusedMessage = "cannot delete vpcs/vpc-1: still referenced by VirtualMachine/vm-1"
)

// TestClassifyDelete: what the answer to a DELETE means for destroy, from
// the errors kcp returns.
func TestClassifyDelete(t *testing.T) {
	gr := vpcsGVR.GroupResource()
	uid := "Precondition failed: UID in precondition: 1111, UID in object meta: 2222"
	for _, tt := range []struct {
		name string
		err  error
		want deleteOutcome
	}{
		{"deleted", nil, deleteDone},
		{"gone already", apierrors.NewNotFound(gr, "vpc-1"), deleteDone},
		{"another object of the name", apierrors.NewConflict(gr, "vpc-1", errors.New(uid)), deleteDone},
		{"deferred", webhookDenial(deferredMessage), deleteDeferred},
		{"deferred already, as an earlier webhook said", webhookDenial(deferredAlreadyMessage), deleteDeferred},
		// Deferred, and carried out before the webhook answered the API
		// server's second ask on the stored object.
		{"deferred and carried out meanwhile", webhookDenial(refusedMessage + "; it has been deleted meanwhile"), deleteDone},
		{"refused, not opted in", webhookDenial(refusedMessage), deleteRefused},
		{"refused, not deferrable", webhookDenial(refusedMessage + "; its deletion is not deferred: it names a resourceVersion precondition, which recording the deferral would break"), deleteRefused},
		{"refused, recording failed", webhookDenial(refusedMessage + "; deferring its deletion failed, so it is only refused: retry later"), deleteRefused},
		{"RBAC", apierrors.NewForbidden(gr, "vpc-1", errors.New(`User "tenant" cannot delete resource "vpcs" in API group "network.test.io"`)), deleteFailed},
		{"another webhook", apierrors.NewForbidden(gr, "vpc-1", errors.New(`admission webhook "policy.example.io" denied the request: frozen`)), deleteFailed},
		{"protection cannot decide", apierrors.NewInternalError(errors.New("checking for dependents failed")), deleteFailed},
		{"another conflict", apierrors.NewConflict(gr, "vpc-1", errors.New("the object has been modified")), deleteFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := classifyDelete(tt.err); got != tt.want {
				t.Errorf("classifyDelete = %s, want %s", got, tt.want)
			}
		})
	}
	// The refusal's explanation quotes the webhook and names both ways out.
	detail := refusedDetail(objectRef{APIVersion: "network.test.io/v1", Kind: "VPC", Namespace: "apps", Name: "vpc-1"}, "root:team-a", statusMessage(webhookDenial(refusedMessage)))
	for _, want := range []string{"VPC apps/vpc-1 (network.test.io/v1) in root:team-a", "still referenced by VirtualMachine/vm-1", "depends_on",
		v1alpha1.DeferDeletionAnnotation + `: "true"`, "defer_deletion = true"} {
		if !strings.Contains(detail, want) {
			t.Errorf("the refusal's detail does not say %q:\n%s", want, detail)
		}
	}
}

// TestWaitDeferred: a deferred deletion is waited for until the object is
// gone; a deferral cancelled meanwhile fails at once; at the timeout the
// error says the deletion is deferred and names the dependents a dry-run
// deletion names.
func TestWaitDeferred(t *testing.T) {
	ctx := context.Background()
	ref := objectRef{APIVersion: "network.test.io/v1", Kind: "VPC", Namespace: "apps", Name: "vpc-1"}
	vpc := func(annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("network.test.io/v1")
		u.SetKind("VPC")
		u.SetNamespace("apps")
		u.SetName("vpc-1")
		u.SetUID("uid-1")
		u.SetAnnotations(annotations)
		return u
	}
	recorded := map[string]string{v1alpha1.DeletionDeferredAnnotation: `{"user":"admin","uid":"uid-1"}`}
	client := func(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
		return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{vpcsGVR: "VPCList"}, objs...)
	}

	t.Run("carried out", func(t *testing.T) {
		dyn := client(vpc(recorded))
		gets := 0
		dyn.PrependReactor("get", "vpcs", func(clienttesting.Action) (bool, runtime.Object, error) {
			if gets++; gets >= 2 {
				return true, nil, apierrors.NewNotFound(vpcsGVR.GroupResource(), "vpc-1")
			}
			return false, nil, nil
		})
		if err := waitDeferred(ctx, dyn.Resource(vpcsGVR).Namespace("apps"), ref, "uid-1", time.Now().Add(10*time.Second), deferredMessage); err != nil {
			t.Fatalf("waitDeferred: %v", err)
		}
	})
	t.Run("replaced by another object of the name", func(t *testing.T) {
		other := vpc(nil)
		other.SetUID("uid-2")
		if err := waitDeferred(ctx, client(other).Resource(vpcsGVR).Namespace("apps"), ref, "uid-1", time.Now().Add(10*time.Second), deferredMessage); err != nil {
			t.Fatalf("waitDeferred: %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		err := waitDeferred(ctx, client(vpc(nil)).Resource(vpcsGVR).Namespace("apps"), ref, "uid-1", time.Now().Add(10*time.Second), deferredMessage)
		if err == nil || !strings.Contains(err.Error(), "the deferral was cancelled") || !strings.Contains(err.Error(), v1alpha1.DeletionDeferredAnnotation) {
			t.Fatalf("waitDeferred: %v, want an error saying the deferral was cancelled", err)
		}
	})
	t.Run("timeout names the dependents", func(t *testing.T) {
		dyn := client(vpc(recorded))
		var dryRun []string
		dyn.PrependReactor("delete", "vpcs", func(a clienttesting.Action) (bool, runtime.Object, error) {
			dryRun = a.(clienttesting.DeleteActionImpl).DeleteOptions.DryRun
			return true, nil, webhookDenial(refusedMessage)
		})
		err := waitDeferred(ctx, dyn.Resource(vpcsGVR).Namespace("apps"), ref, "uid-1", time.Now().Add(100*time.Millisecond), deferredMessage)
		if len(dryRun) != 1 || dryRun[0] != metav1.DryRunAll {
			t.Errorf("the dependents were not asked with a dry-run deletion: %v", dryRun)
		}
		for _, want := range []string{"its deletion is deferred", "it still waits for VirtualMachine apps/vm-1 (in workspace 2x8ab)", "timeouts.delete"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("waitDeferred: %v, want an error saying %q", err, want)
			}
		}
	})
	t.Run("timeout, nothing references it any more", func(t *testing.T) {
		err := waitDeferred(ctx, client(vpc(recorded)).Resource(vpcsGVR).Namespace("apps"), ref, "uid-1", time.Now().Add(100*time.Millisecond), deferredMessage)
		if err == nil || !strings.Contains(err.Error(), "nothing references it any more") {
			t.Errorf("waitDeferred: %v, want an error saying nothing references it any more", err)
		}
	})
}

// TestReplacedSince: a refresh keeps the object Terraform made, and only
// that one: another of the same name made since (deleted and created again
// by hand, or a workspace recreated at the path) is not adopted, so that
// destroy never deletes it; an import, which has no UID yet, adopts what it
// finds.
func TestReplacedSince(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": "vpc-1", "uid": "uid-2"}}}
	for _, tt := range []struct {
		name string
		uid  types.String
		want bool
	}{
		{"the object made", types.StringValue("uid-2"), false},
		{"another of the name", types.StringValue("uid-1"), true},
		{"an import", types.StringNull(), false},
		{"an import with the UID not known yet", types.StringUnknown(), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := replacedSince(objectModel{UID: tt.uid}, live); got != tt.want {
				t.Errorf("replacedSince = %v, want %v", got, tt.want)
			}
		})
	}
}
