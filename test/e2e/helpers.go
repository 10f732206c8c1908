package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

var (
	rulesGVR   = v1alpha1.GroupVersion.WithResource(v1alpha1.Resource)
	webhookGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

// ruleSpec is a DependencyRule whose dependent is dependent and whose one
// dependency is target in the workspace at exportPath, at fieldPath.
func ruleObject(name string, dependent, target fixtures.APIType, exportPath, fieldPath string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "DependencyRule",
		"metadata":   map[string]interface{}{"name": name},
		"spec": map[string]interface{}{
			"dependent": map[string]interface{}{
				"apiExportName": dependent.Group, "group": dependent.Group, "version": "v1",
				"kind": dependent.Kind, "resource": dependent.Resource,
			},
			"dependencies": []interface{}{map[string]interface{}{
				"apiExportRef": map[string]interface{}{"path": exportPath, "name": target.Group},
				"group":        target.Group, "version": "v1", "resource": target.Resource,
				"fieldRef": map[string]interface{}{"path": fieldPath},
			}},
		},
	}}
}

func (top *Topology) createRule(ctx context.Context, t *testing.T, ws env.Workspace, rule *unstructured.Unstructured) {
	t.Helper()
	_, err := top.dynamicFor(t, ws.Path).Resource(rulesGVR).Create(ctx, rule, metav1.CreateOptions{})
	check.Must(t, err)
}

// protectVPCs creates the rule most tests protect with, vm-needs-vpc in the
// compute workspace: a VirtualMachine needs the VPC its .spec.vpcRef.name
// names. It returns once the rule is Ready.
func (top *Topology) protectVPCs(ctx context.Context, t *testing.T) {
	t.Helper()
	top.createRule(ctx, t, top.Compute, ruleObject("vm-needs-vpc", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, ".spec.vpcRef.name"))
	top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
}

func (top *Topology) getRule(ctx context.Context, t *testing.T, ws env.Workspace, name string) *unstructured.Unstructured {
	t.Helper()
	r, err := top.dynamicFor(t, ws.Path).Resource(rulesGVR).Get(ctx, name, metav1.GetOptions{})
	check.Must(t, err)
	return r
}

func (top *Topology) deleteRule(ctx context.Context, t *testing.T, ws env.Workspace, name string) {
	t.Helper()
	err := top.dynamicFor(t, ws.Path).Resource(rulesGVR).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// condition returns the status, reason and message of a rule's condition
// for the rule's current generation, or "" when it is absent or stale.
func condition(rule *unstructured.Unstructured, condType string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(rule.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		if m["type"] != condType {
			continue
		}
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		if gen != rule.GetGeneration() {
			return "", "", ""
		}
		return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
	}
	return "", "", ""
}

// waitReady waits for the rule's Ready condition and returns how long that
// took from now.
func (top *Topology) waitReady(ctx context.Context, t *testing.T, ws env.Workspace, name string) time.Duration {
	t.Helper()
	start := time.Now()
	// A rule added over a type whose objects are settled is Settling for
	// the webhook's --settle-after and 40 s (settle.TransitionFor).
	check.Eventually(ctx, t, 2*time.Minute, "rule "+name+" to become Ready", func() error {
		status, reason, msg := condition(top.getRule(ctx, t, ws, name), v1alpha1.ConditionReady)
		if status != "True" {
			return fmt.Errorf("condition Ready=%q %s: %s", status, reason, msg)
		}
		return nil
	})
	return time.Since(start)
}

// waitCondition waits until the rule's condition has the given status and
// reason, and returns its message.
func (top *Topology) waitCondition(ctx context.Context, t *testing.T, ws env.Workspace, name, condType, wantStatus, wantReason string) string {
	t.Helper()
	var message string
	check.Eventually(ctx, t, time.Minute, fmt.Sprintf("%s/%s=%s (%s)", name, condType, wantStatus, wantReason), func() error {
		status, reason, msg := condition(top.getRule(ctx, t, ws, name), condType)
		if status != wantStatus || reason != wantReason {
			return fmt.Errorf("%s=%q reason %q: %s", condType, status, reason, msg)
		}
		message = msg
		return nil
	})
	return message
}

// waitEvent waits for an Event with reason about the object named name in
// ws's namespace, and returns its note.
func (top *Topology) waitEvent(ctx context.Context, t *testing.T, ws env.Workspace, namespace, name, reason string) string {
	t.Helper()
	api := top.dynamicFor(t, ws.Path).Resource(process.EventsGVR).Namespace(namespace)
	var note string
	check.Eventually(ctx, t, 30*time.Second, fmt.Sprintf("a %s Event on %s in %s", reason, name, ws.Path), func() error {
		list, err := api.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for _, ev := range list.Items {
			regarding, _, _ := unstructured.NestedString(ev.Object, "regarding", "name")
			got, _, _ := unstructured.NestedString(ev.Object, "reason")
			if regarding == name && got == reason {
				note, _, _ = unstructured.NestedString(ev.Object, "note")
				return nil
			}
			seen = append(seen, regarding+":"+got)
		}
		return fmt.Errorf("not among %v", seen)
	})
	return note
}

// webhookConfiguration returns the installed configuration in ws, or nil.
func (top *Topology) webhookConfiguration(ctx context.Context, t *testing.T, ws env.Workspace) *unstructured.Unstructured {
	t.Helper()
	u, err := top.dynamicFor(t, ws.Path).Resource(webhookGVR).Get(ctx, v1alpha1.WebhookConfigurationName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	check.Must(t, err)
	return u
}

// protectedResources lists the resources the configuration in ws covers.
func (top *Topology) protectedResources(ctx context.Context, t *testing.T, ws env.Workspace) []string {
	t.Helper()
	u := top.webhookConfiguration(ctx, t, ws)
	if u == nil {
		return nil
	}
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	var out []string
	for _, h := range hooks {
		rules, _, _ := unstructured.NestedSlice(h.(map[string]interface{}), "rules")
		for _, r := range rules {
			if ops, _, _ := unstructured.NestedStringSlice(r.(map[string]interface{}), "operations"); !slices.Contains(ops, "DELETE") {
				continue
			}
			res, _, _ := unstructured.NestedStringSlice(r.(map[string]interface{}), "resources")
			out = append(out, res...)
		}
	}
	return out
}

// object creates an object of type a in the consumer with the given spec.
func (top *Topology) object(ctx context.Context, t *testing.T, ws env.Workspace, a fixtures.APIType, name string, spec map[string]interface{}, annotations map[string]string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": a.Group + "/v1",
		"kind":       a.Kind,
		"metadata":   map[string]interface{}{"name": name},
		"spec":       spec,
	}}
	if len(annotations) > 0 {
		u.SetAnnotations(annotations)
	}
	res := top.objects(t, ws, a)
	check.Eventually(ctx, t, time.Minute, "creating "+a.Kind+"/"+name, func() error {
		_, err := res.Create(ctx, u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// objects is the admin client for the objects of type a in ws: those in
// the namespace apps, where the tests keep them, unless a is cluster-scoped.
func (top *Topology) objects(t *testing.T, ws env.Workspace, a fixtures.APIType) dynamic.ResourceInterface {
	t.Helper()
	res := top.dynamicFor(t, ws.Path).Resource(a.GVR())
	if a.ClusterScoped {
		return res
	}
	return res.Namespace("apps")
}

// remove deletes an object and returns the error kcp answered with.
func (top *Topology) remove(ctx context.Context, t *testing.T, ws env.Workspace, a fixtures.APIType, name string) error {
	t.Helper()
	return top.objects(t, ws, a).Delete(ctx, name, metav1.DeleteOptions{})
}

// exists reports whether the object is still there.
func (top *Topology) exists(ctx context.Context, t *testing.T, ws env.Workspace, a fixtures.APIType, name string) bool {
	t.Helper()
	_, err := top.objects(t, ws, a).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	check.Must(t, err)
	return true
}

// expectDenied deletes and asserts the deletion was refused with want in
// the message, and that the object is still there.
func (top *Topology) expectDenied(ctx context.Context, t *testing.T, ws env.Workspace, a fixtures.APIType, name, want string) {
	t.Helper()
	err := top.remove(ctx, t, ws, a, name)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("deleting %s/%s in %s: want a denial containing %q, got %v", a.Kind, name, ws.Path, want, err)
	}
	if !top.exists(ctx, t, ws, a, name) {
		t.Fatalf("%s/%s was deleted although the deletion was denied", a.Kind, name)
	}
}

// expectCauses deletes a referenced object as a dry run and checks that the
// denial names, as causes a tool reads (v1alpha1.DependentOf), exactly the
// stored dependents of type dep called names, in ws's logical cluster.
func (top *Topology) expectCauses(ctx context.Context, t *testing.T, ws env.Workspace, a fixtures.APIType, name string, dep fixtures.APIType, names ...string) {
	t.Helper()
	err := top.objects(t, ws, a).Delete(ctx, name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("deleting %s/%s in %s: want a denial with details, got %v", a.Kind, name, ws.Path, err)
	}
	details := status.Status().Details
	if details.Name != name || details.Group != a.Group || details.Kind != a.Resource {
		t.Errorf("the denial's details name %s %s/%s, want %s %s/%s", details.Name, details.Group, details.Kind, name, a.Group, a.Resource)
	}
	var got []string
	for _, c := range details.Causes {
		ref, pending, ok, err := v1alpha1.DependentOf(c)
		if !ok || err != nil {
			t.Fatalf("a cause of the denial is not a dependent: %+v (%v)", c, err)
		}
		if pending || ref.Workspace != ws.Cluster || ref.Group != dep.Group || ref.Resource != dep.Resource || ref.Kind != dep.Kind {
			t.Errorf("cause %+v (pending %v): want a stored %s in the logical cluster %s", ref, pending, dep.Kind, ws.Cluster)
		}
		got = append(got, ref.Name)
	}
	if !slices.Equal(got, names) {
		t.Errorf("the denial's causes name %v, want %v", got, names)
	}
}

// decidedDenial deletes a referenced object, for check.Eventually: nil
// once the deletion is refused with want in the message, an error to retry
// while it is refused otherwise (before the webhook decides it). A deletion
// that succeeds fails the test at once: the object was referenced.
//
// Each attempt is first made as a dry run, and the deletion is sent only
// once the dry run is refused with want: a webhook configuration the
// webhook or the controller just changed (a published stamp withdrawn,
// so that a settled object's deletion comes to the webhook again) takes
// kcp a moment to apply, and a rule is not Ready before it has (the
// controller waits --webhook-propagation-delay for that).
func (top *Topology) decidedDenial(ctx context.Context, t *testing.T, ws env.Workspace, a fixtures.APIType, name, want string) error {
	t.Helper()
	dryErr := top.objects(t, ws, a).Delete(ctx, name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	if dryErr == nil || !strings.Contains(dryErr.Error(), want) {
		return fmt.Errorf("a dry run is not refused by the webhook yet: %v", dryErr)
	}
	err := top.remove(ctx, t, ws, a, name)
	if err == nil {
		t.Fatalf("%s/%s in %s was deleted; want a denial containing %q", a.Kind, name, ws.Path, want)
	}
	if !strings.Contains(err.Error(), want) {
		return fmt.Errorf("not decided by the webhook yet: %v", err)
	}
	return nil
}

// expectDeleted deletes and asserts success.
func (top *Topology) expectDeleted(ctx context.Context, t *testing.T, ws env.Workspace, a fixtures.APIType, name string) {
	t.Helper()
	if err := top.remove(ctx, t, ws, a, name); err != nil {
		t.Fatalf("deleting %s/%s in %s: %v", a.Kind, name, ws.Path, err)
	}
}

// vpcInUse creates, in ws, vpc-1 and vm-1 referencing it.
func (top *Topology) vpcInUse(ctx context.Context, t *testing.T, ws env.Workspace) {
	t.Helper()
	top.object(ctx, t, ws, fixtures.VPCs, "vpc-1", map[string]interface{}{}, nil)
	top.object(ctx, t, ws, fixtures.VirtualMachines, "vm-1", ref("vpc-1"), nil)
}

func ref(name string) map[string]interface{} {
	return map[string]interface{}{"vpcRef": map[string]interface{}{"name": name}}
}

// publishedStamp is the stamp whose settled objects of type a the deletion
// webhook in a's export workspace leaves out, "" for none.
func (top *Topology) publishedStamp(ctx context.Context, t *testing.T, a fixtures.APIType) string {
	t.Helper()
	ws := top.Network
	if a.Group != fixtures.VPCs.Group {
		ws = top.Compute
	}
	u := top.webhookConfiguration(ctx, t, ws)
	if u == nil {
		return ""
	}
	stamp, err := stampIn(u, a)
	check.Must(t, err)
	return stamp
}

// stampIn is the current stamp whose settled objects of type a the
// deletion webhook configuration u leaves out, "" for none.
func stampIn(u *unstructured.Unstructured, a fixtures.APIType) (string, error) {
	pub, err := publicationIn(u, a)
	return pub.Current, err
}

// publicationIn is what the deletion webhook configuration u publishes for
// objects of type a.
func publicationIn(u *unstructured.Unstructured, a fixtures.APIType) (settle.Publication, error) {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cfg); err != nil {
		return settle.Publication{}, err
	}
	return settle.PublishedIn(cfg)[schema.GroupResource{Group: a.Group, Resource: a.Resource}], nil
}

// waitIndexWebhookActive waits until kcp calls the reference index webhook
// on VMs in ws: a dry-run create of a probe VM that carries an index stamp
// label of its own comes back without it (the webhook drops or replaces
// index labels a client set). A new index configuration reaches a consumer
// on another shard through the cache server.
func (top *Topology) waitIndexWebhookActive(ctx context.Context, t *testing.T, ws env.Workspace) {
	t.Helper()
	vms := top.objects(t, ws, fixtures.VirtualMachines)
	check.Eventually(ctx, t, 2*time.Minute, "kcp to call the index webhook in "+ws.Path, func() error {
		probe := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": fixtures.VirtualMachines.Group + "/v1", "kind": fixtures.VirtualMachines.Kind,
			"metadata": map[string]interface{}{"name": "vm-probe", "labels": map[string]interface{}{registry.StampLabel: "probe"}},
			"spec":     ref("nothing"),
		}}
		created, err := vms.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if s := created.GetLabels()[registry.StampLabel]; s == "probe" {
			return fmt.Errorf("the index webhook did not see vm-probe yet")
		}
		return nil
	})
}

// waitIndexWebhookGone waits until kcp no longer calls the reference index
// webhook on VMs in ws. The probe VM is created with an index stamp label
// of its own, which only survives a create no webhook saw: the webhook
// drops index labels a client set, also once it no longer indexes the type,
// so a probe without labels could not tell the two apart.
func (top *Topology) waitIndexWebhookGone(ctx context.Context, t *testing.T, ws env.Workspace) {
	t.Helper()
	vms := top.objects(t, ws, fixtures.VirtualMachines)
	check.Eventually(ctx, t, 2*time.Minute, "kcp to stop calling the deleted index webhook", func() error {
		_ = vms.Delete(ctx, "vm-probe", metav1.DeleteOptions{})
		probe := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": fixtures.VirtualMachines.Group + "/v1", "kind": fixtures.VirtualMachines.Kind,
			"metadata": map[string]interface{}{"name": "vm-probe", "labels": map[string]interface{}{registry.StampLabel: "probe"}},
			"spec":     ref("nothing"),
		}}
		created, err := vms.Create(ctx, probe, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if s := created.GetLabels()[registry.StampLabel]; s != "probe" {
			return fmt.Errorf("the index webhook still saw vm-probe (its stamp label is %q)", s)
		}
		return nil
	})
}

// ownTypeCRD is a CustomResourceDefinition a tenant may create of its own,
// of a's group, resource and kind, with the given scope, and any content.
func ownTypeCRD(a fixtures.APIType, scope string) string {
	singular := strings.ToLower(a.Kind)
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.%[1]s
spec:
  group: %[1]s
  scope: %[5]s
  names: {plural: %[2]s, singular: %[3]s, kind: %[4]s, listKind: %[4]sList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, a.Group, a.Resource, singular, a.Kind, scope)
}
