package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/controller"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// TestTypesServed: a rule that names a type its exports do not serve (a
// version the export does not serve, the singular resource, a field path
// its structural schema does not have) protects nothing, so it is never
// Ready, and its TypesServed condition names the field of the rule that is
// wrong. Fixed, it becomes Ready. The controller reads the exports through
// the dep-ctrl export's read-only claims, and nothing more: a workspace
// that withdraws them leaves its rules not Ready, but still protected.
func TestTypesServed(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.SingleShard)
	top := setupTopology(ctx, t, e)
	// Volumes have a structural schema, exported next to the VMs.
	volumes := fixtures.Volumes
	apply(ctx, t, top.admin(t, top.Compute.Path), fixtures.StructuralExportYAML(volumes))
	runtimetest.Start(ctx, t, e, top.DepCtrl.Path)

	wrongVersion := ruleObject("vm-v1beta1", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, ".spec.vpcRef.name")
	check.Must(t, unstructured.SetNestedField(wrongVersion.Object, "v1beta1", "spec", "dependent", "version"))
	singular := ruleObject("vm-singular", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, ".spec.vpcRef.name")
	check.Must(t, unstructured.SetNestedField(singular.Object, "virtualmachine", "spec", "dependent", "resource"))
	misspelt := ruleObject("volume-misspelt", volumes, fixtures.VPCs, top.Network.Path, ".spec.vpcRef.nme")
	for _, r := range []*unstructured.Unstructured{wrongVersion, singular, misspelt} {
		top.createRule(ctx, t, top.Compute, r)
	}

	for _, tt := range []struct{ rule, reason, message string }{
		{"vm-v1beta1", v1alpha1.ReasonVersionNotServed, "spec.dependent.version: export compute.test.io serves virtualmachines in v1, not v1beta1"},
		{"vm-singular", v1alpha1.ReasonResourceNotServed, "spec.dependent.resource: export compute.test.io serves no resource virtualmachine in compute.test.io: name the plural, virtualmachines"},
		{"volume-misspelt", v1alpha1.ReasonFieldPathNotInSchema, "spec.dependencies[0].fieldRef.path: .spec.vpcRef.nme does not fit the schema of volumes v1 served by export storage.test.io: .spec.vpcRef has no field nme"},
	} {
		msg := top.waitCondition(ctx, t, top.Compute, tt.rule, v1alpha1.ConditionTypesServed, "False", tt.reason)
		if msg != tt.message {
			t.Errorf("%s: TypesServed message %q, want %q", tt.rule, msg, tt.message)
		}
		// Installed and enforced all the same: the check decides what
		// Ready means, never what protects. Ready stays False.
		top.waitCondition(ctx, t, top.Compute, tt.rule, v1alpha1.ConditionEnforced, "True", "Registered")
		top.waitCondition(ctx, t, top.Compute, tt.rule, v1alpha1.ConditionWebhookInstalled, "True", "Installed")
		if msg := top.waitCondition(ctx, t, top.Compute, tt.rule, v1alpha1.ConditionReady, "False", tt.reason); msg != tt.message {
			t.Errorf("%s: Ready message %q, want %q", tt.rule, msg, tt.message)
		}
	}

	t.Run("fixed rules become Ready", func(t *testing.T) {
		top.updateRule(ctx, t, top.Compute, "vm-v1beta1", func(r *unstructured.Unstructured) {
			check.Must(t, unstructured.SetNestedField(r.Object, "v1", "spec", "dependent", "version"))
		})
		top.waitReady(ctx, t, top.Compute, "vm-v1beta1")
		top.updateRule(ctx, t, top.Compute, "volume-misspelt", func(r *unstructured.Unstructured) {
			deps, _, _ := unstructured.NestedSlice(r.Object, "spec", "dependencies")
			check.Must(t, unstructured.SetNestedField(deps[0].(map[string]interface{}), ".spec.attachments[*].vpc", "fieldRef", "path"))
			check.Must(t, unstructured.SetNestedSlice(r.Object, deps, "spec", "dependencies"))
		})
		top.waitReady(ctx, t, top.Compute, "volume-misspelt")
		if _, reason, _ := condition(top.getRule(ctx, t, top.Compute, "vm-singular"), v1alpha1.ConditionReady); reason != v1alpha1.ReasonResourceNotServed {
			t.Fatalf("vm-singular: Ready reason %q, want %s", reason, v1alpha1.ReasonResourceNotServed)
		}
	})

	t.Run("the controller may get exports and schemas, nothing more", func(t *testing.T) {
		vw := top.controllerVirtualWorkspace(ctx, t)
		compute := vw(top.Compute)
		if _, err := compute.Resource(process.APIExportsGVR).Get(ctx, fixtures.VirtualMachines.Group, metav1.GetOptions{}); err != nil {
			t.Fatalf("getting the compute export through the claim: %v", err)
		}
		if _, err := compute.Resource(process.APIResourceSchemasGVR).Get(ctx, "v1."+volumes.Resource+"."+volumes.Group, metav1.GetOptions{}); err != nil {
			t.Fatalf("getting the volumes schema through the claim: %v", err)
		}
		if _, err := compute.Resource(process.APIExportsGVR).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("listing exports must be refused (the claim is get only), got %v", err)
		}
		// Only through the claim: the workspace itself grants it nothing.
		direct, err := dynamic.NewForConfig(top.Env.IdentityConfig(top.Env.MustIdentity(env.ControllerUser), top.Compute.Path))
		check.Must(t, err)
		if _, err := direct.Resource(process.APIExportsGVR).Get(ctx, fixtures.VirtualMachines.Group, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("getting the compute export directly must be refused, got %v", err)
		}
	})

	t.Run("claims withdrawn: not Ready, still protected", func(t *testing.T) {
		top.setTypeClaims(ctx, t, top.Network, "Rejected")
		msg := top.waitCondition(ctx, t, top.Compute, "vm-v1beta1", v1alpha1.ConditionTypesServed, "Unknown", controller.ReasonTypesClaimNotAccepted)
		if !strings.Contains(msg, "workspace "+top.Network.Path) {
			t.Errorf("message %q does not name %s", msg, top.Network.Path)
		}
		top.waitCondition(ctx, t, top.Compute, "vm-v1beta1", v1alpha1.ConditionReady, "False", controller.ReasonTypesClaimNotAccepted)
		check.Eventually(ctx, t, 30*time.Second, "the controller to be refused the network export", func() error {
			_, err := top.controllerVirtualWorkspace(ctx, t)(top.Network).Resource(process.APIExportsGVR).Get(ctx, fixtures.VPCs.Group, metav1.GetOptions{})
			if !apierrors.IsForbidden(err) {
				return errStill("not forbidden: " + errString(err))
			}
			return nil
		})
		if got := top.protectedResources(ctx, t, top.Network); len(got) == 0 {
			t.Fatal("the webhook configuration in the network workspace is gone: a check that cannot be made must not remove protection")
		}
		top.setTypeClaims(ctx, t, top.Network, "Accepted")
		top.waitReady(ctx, t, top.Compute, "vm-v1beta1")
	})
}

// updateRule reads the rule, edits it and writes it back.
func (top *Topology) updateRule(ctx context.Context, t *testing.T, ws env.Workspace, name string, edit func(*unstructured.Unstructured)) {
	t.Helper()
	r := top.getRule(ctx, t, ws, name)
	edit(r)
	_, err := top.dynamicFor(t, ws.Path).Resource(rulesGVR).Update(ctx, r, metav1.UpdateOptions{})
	check.Must(t, err)
}

// setTypeClaims sets the state of the dep-ctrl binding's claims on
// apiexports and apiresourceschemas in ws.
func (top *Topology) setTypeClaims(ctx context.Context, t *testing.T, ws env.Workspace, state string) {
	t.Helper()
	api := top.dynamicFor(t, ws.Path).Resource(process.APIBindingsGVR)
	check.Eventually(ctx, t, 30*time.Second, "setting the type claims in "+ws.Path+" to "+state, func() error {
		b, err := api.Get(ctx, "dep-ctrl", metav1.GetOptions{})
		if err != nil {
			return err
		}
		claims, _, _ := unstructured.NestedSlice(b.Object, "spec", "permissionClaims")
		for _, c := range claims {
			m := c.(map[string]interface{})
			if m["group"] == "apis.kcp.io" {
				m["state"] = state
			}
		}
		check.Must(t, unstructured.SetNestedSlice(b.Object, claims, "spec", "permissionClaims"))
		delete(b.Object, "status")
		_, err = api.Update(ctx, b, metav1.UpdateOptions{})
		return err
	})
}

// controllerVirtualWorkspace returns, for a workspace, a client with the
// controller's identity to that workspace through the dep-ctrl export's
// virtual workspace.
func (top *Topology) controllerVirtualWorkspace(ctx context.Context, t *testing.T) func(env.Workspace) dynamic.Interface {
	t.Helper()
	cfg := top.Env.IdentityConfig(top.Env.MustIdentity(env.ControllerUser), top.DepCtrl.Path)
	vw, err := process.NewVirtualWorkspaces(cfg, v1alpha1.DefaultAPIExportName)
	check.Must(t, err)
	urls, err := vw.URLs(ctx)
	check.Must(t, err)
	bindings, err := vw.ListAll(ctx, urls, process.APIBindingsGVR)
	check.Must(t, err)
	return func(ws env.Workspace) dynamic.Interface {
		for _, b := range bindings {
			if b.Cluster == ws.Cluster {
				c, err := vw.Client(b.URL, b.Cluster)
				check.Must(t, err)
				return c
			}
		}
		t.Fatalf("no virtual workspace serves %s", ws.Path)
		return nil
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
