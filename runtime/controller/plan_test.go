package controller

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

func gvr(group, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}
}

var (
	testVPCs = gvr("network.io", "vpcs")
	testFWs  = gvr("network.io", "firewallrules")
	testVMs  = gvr("compute.io", "virtualmachines")
	testDBs  = gvr("compute.io", "manageddbs")
)

func fakeResolve(paths map[string]string) ResolveFunc {
	return func(_ context.Context, path string) (string, error) {
		if c, ok := paths[path]; ok {
			return c, nil
		}
		return "", fmt.Errorf("%w: %q (while resolving %q)", ErrWorkspaceNotFound, path, path)
	}
}

// unreadExports is the ExportFunc of tests that are not about what the
// exports serve: every read fails.
func unreadExports(_ context.Context, cluster, name string) (*v1alpha1.ExportTypes, error) {
	return nil, fmt.Errorf("export %s in %s is not read in this test", name, cluster)
}

func TestComputePlan(t *testing.T) {
	resolve := fakeResolve(map[string]string{"root:network": "net", "root:org:storage": "sto", "root:unbound": "unb", "root:noclaim": "noc"})
	bindings := map[string]Binding{
		"net": {URL: "https://vw", ClaimAccepted: true},
		"sto": {URL: "https://vw2", ClaimAccepted: true},
		"noc": {URL: "https://vw", ClaimAccepted: false},
	}
	rules := []RuleInput{
		{Key: "comp/vm", Dependent: testVMs, Dependencies: []DependencyInput{{ExportPath: "root:network", GVR: testVPCs}}},
		{Key: "comp/db", Dependent: testDBs, Dependencies: []DependencyInput{
			{ExportPath: "root:network", GVR: testFWs},
			{ExportPath: "root:network", GVR: testVPCs},
			{ExportPath: "root:org:storage", GVR: gvr("storage.io", "buckets")},
		}},
		{Key: "comp/missing", Dependent: testVMs, Dependencies: []DependencyInput{{ExportPath: "root:gone", GVR: testVPCs}}},
		{Key: "comp/unbound", Dependent: testVMs, Dependencies: []DependencyInput{{ExportPath: "root:unbound", GVR: gvr("x.io", "xs")}}},
		{Key: "comp/noclaim", Dependent: testVMs, Dependencies: []DependencyInput{{ExportPath: "root:noclaim", GVR: gvr("y.io", "ys")}}},
		{Key: "comp/invalid", Invalid: "spec.dependencies: at least one dependency is required"},
		{Key: "apps/app", Dependent: gvr("apps.io", "apps"), Dependencies: []DependencyInput{{ExportPath: "root:network", GVR: testVPCs}}},
	}
	p := ComputePlan(context.Background(), rules, bindings, resolve, unreadExports)

	// Each protected resource is scoped to the workspaces of the rules
	// that protect it, and only those.
	wantScopes := map[string]map[schema.GroupVersionResource][]string{
		"net": {testVPCs: {"apps", "comp"}, testFWs: {"comp"}},
		"sto": {gvr("storage.io", "buckets"): {"comp"}},
	}
	if !reflect.DeepEqual(p.Scopes, wantScopes) {
		t.Errorf("scopes = %v, want %v", p.Scopes, wantScopes)
	}

	wantWebhooks := map[string][]schema.GroupVersionResource{
		"net": {testFWs, testVPCs},
		"sto": {gvr("storage.io", "buckets")},
	}
	if !reflect.DeepEqual(p.Webhooks, wantWebhooks) {
		t.Fatalf("webhooks = %v, want %v", p.Webhooks, wantWebhooks)
	}
	check := func(key string, get func(*RulePlan) Outcome, ok bool, reason, msg string) {
		t.Helper()
		o := get(p.Rules[key])
		if o.OK != ok || o.Reason != reason || !strings.Contains(o.Message, msg) {
			t.Errorf("%s: %+v, want ok=%v reason=%s message containing %q", key, o, ok, reason, msg)
		}
	}
	resolved := func(r *RulePlan) Outcome { return r.Resolved }
	installed := func(r *RulePlan) Outcome { return r.Installed }
	check("comp/vm", installed, true, "Installed", "1 workspace")
	check("comp/db", installed, true, "Installed", "2 workspace")
	check("comp/missing", resolved, false, "WorkspaceNotFound", `"root:gone"`)
	check("comp/unbound", installed, false, "ExportNotBound", "root:unbound has not bound")
	check("comp/noclaim", installed, false, "ClaimNotAccepted", "did not accept its permission claim")
	check("comp/invalid", resolved, false, "InvalidSpec", "at least one dependency")
}

func TestComputePlanForgetsRemovedDependencies(t *testing.T) {
	resolve := fakeResolve(map[string]string{"root:network": "net", "root:other": "oth"})
	bindings := map[string]Binding{"net": {ClaimAccepted: true}, "oth": {ClaimAccepted: true}}
	before := ComputePlan(context.Background(), []RuleInput{{Key: "c/r", Dependent: testVMs, Dependencies: []DependencyInput{
		{ExportPath: "root:network", GVR: testVPCs}, {ExportPath: "root:other", GVR: testFWs}}}}, bindings, resolve, unreadExports)
	if len(before.Webhooks) != 2 {
		t.Fatalf("before: %v", before.Webhooks)
	}
	after := ComputePlan(context.Background(), []RuleInput{{Key: "c/r", Dependent: testVMs, Dependencies: []DependencyInput{
		{ExportPath: "root:network", GVR: testVPCs}}}}, bindings, resolve, unreadExports)
	if _, ok := after.Webhooks["oth"]; ok || len(after.Webhooks["net"]) != 1 {
		t.Fatalf("after an in-place edit the old target must disappear: %v", after.Webhooks)
	}
}

func TestComputePlanReportsCycles(t *testing.T) {
	resolve := fakeResolve(map[string]string{"root:network": "net", "root:compute": "comp"})
	bindings := map[string]Binding{"net": {ClaimAccepted: true}, "comp": {ClaimAccepted: true}}
	p := ComputePlan(context.Background(), []RuleInput{
		{Key: "comp/vm", Dependent: testVMs, Dependencies: []DependencyInput{{ExportPath: "root:network", GVR: testVPCs}}},
		{Key: "net/vpc", Dependent: testVPCs, Dependencies: []DependencyInput{{ExportPath: "root:compute", GVR: testVMs}}},
	}, bindings, resolve, unreadExports)
	for _, key := range []string{"comp/vm", "net/vpc"} {
		if a := p.Rules[key].Acyclic; a.OK || a.Reason != "CycleDetected" || !strings.Contains(a.Message, "skip-protection") {
			t.Errorf("%s: %+v", key, a)
		}
	}
	// Protection stays installed: a cycle is reported, not ignored.
	if len(p.Webhooks) != 2 {
		t.Fatalf("webhooks: %v", p.Webhooks)
	}
}

func TestComputePlanIndexes(t *testing.T) {
	resolve := fakeResolve(map[string]string{"root:network": "net"})
	vm := func(key string) RuleInput {
		return RuleInput{Key: key, Dependent: testVMs, Dependencies: []DependencyInput{{ExportPath: "root:network", GVR: testVPCs}}}
	}
	tests := []struct {
		name     string
		rules    []RuleInput
		bindings map[string]Binding
		want     map[string][]schema.GroupVersionResource
		// outcome of the first rule's Indexed condition
		ok      bool
		reason  string
		message string
		target  string
	}{{
		name:     "claim accepted",
		rules:    []RuleInput{vm("comp/vm")},
		bindings: map[string]Binding{"net": {ClaimAccepted: true}, "comp": {IndexClaimAccepted: true}},
		want:     map[string][]schema.GroupVersionResource{"comp": {testVMs}},
		ok:       true, reason: "Indexed", message: "covers writes of virtualmachines.compute.io", target: "comp",
	}, {
		name:     "claim not accepted",
		rules:    []RuleInput{vm("comp/vm")},
		bindings: map[string]Binding{"net": {ClaimAccepted: true}, "comp": {ClaimAccepted: true, EventsAccepted: true}},
		want:     map[string][]schema.GroupVersionResource{},
		reason:   "ClaimNotAccepted", message: "did not accept its permission claim on mutatingwebhookconfigurations",
	}, {
		name:     "rule's workspace not bound",
		rules:    []RuleInput{vm("comp/vm")},
		bindings: map[string]Binding{"net": {ClaimAccepted: true, IndexClaimAccepted: true}},
		want:     map[string][]schema.GroupVersionResource{},
		reason:   "ExportNotBound", message: "has not bound the dep-ctrl APIExport",
	}, {
		name:     "invalid rule",
		rules:    []RuleInput{{Key: "comp/bad", Invalid: "spec.dependent.resource: Required value"}},
		bindings: map[string]Binding{"comp": {IndexClaimAccepted: true}},
		want:     map[string][]schema.GroupVersionResource{},
		reason:   "InvalidSpec", message: "spec.dependent.resource",
	}, {
		name:     "dependency workspace not found: the dependent is indexed anyway",
		rules:    []RuleInput{{Key: "comp/dangling", Dependent: testVMs, Dependencies: []DependencyInput{{ExportPath: "root:gone", GVR: testVPCs}}}},
		bindings: map[string]Binding{"comp": {IndexClaimAccepted: true}},
		want:     map[string][]schema.GroupVersionResource{"comp": {testVMs}},
		ok:       true, reason: "Indexed", target: "comp",
	}, {
		name: "one configuration per workspace, each dependent type once",
		rules: []RuleInput{vm("comp/vm"), vm("comp/vm-again"),
			{Key: "comp/db", Dependent: testDBs, Dependencies: []DependencyInput{{ExportPath: "root:network", GVR: testFWs}}},
			{Key: "net/fw", Dependent: testFWs, Dependencies: []DependencyInput{{ExportPath: "root:network", GVR: testVPCs}}}},
		bindings: map[string]Binding{"net": {ClaimAccepted: true, IndexClaimAccepted: true}, "comp": {IndexClaimAccepted: true}},
		want:     map[string][]schema.GroupVersionResource{"comp": {testDBs, testVMs}, "net": {testFWs}},
		ok:       true, reason: "Indexed", target: "comp",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ComputePlan(context.Background(), tt.rules, tt.bindings, resolve, unreadExports)
			if !reflect.DeepEqual(p.Indexes, tt.want) {
				t.Errorf("indexes = %v, want %v", p.Indexes, tt.want)
			}
			rp := p.Rules[tt.rules[0].Key]
			if o := rp.Indexed; o.OK != tt.ok || o.Reason != tt.reason || !strings.Contains(o.Message, tt.message) {
				t.Errorf("indexed = %+v, want ok=%v reason=%s message containing %q", o, tt.ok, tt.reason, tt.message)
			}
			if rp.IndexTarget != tt.target {
				t.Errorf("index target %q, want %q", rp.IndexTarget, tt.target)
			}
		})
	}
}

// TestComputePlanIndexDoesNotGateProtection: whatever happens to the
// index, the deletion webhook is planned as before.
func TestComputePlanIndexDoesNotGateProtection(t *testing.T) {
	resolve := fakeResolve(map[string]string{"root:network": "net"})
	rules := []RuleInput{{Key: "comp/vm", Dependent: testVMs, Dependencies: []DependencyInput{{ExportPath: "root:network", GVR: testVPCs}}}}
	for name, comp := range map[string]Binding{"accepted": {IndexClaimAccepted: true}, "not accepted": {}} {
		p := ComputePlan(context.Background(), rules, map[string]Binding{"net": {ClaimAccepted: true}, "comp": comp}, resolve, unreadExports)
		if !reflect.DeepEqual(p.Webhooks, map[string][]schema.GroupVersionResource{"net": {testVPCs}}) || !p.Rules["comp/vm"].Installed.OK {
			t.Errorf("%s: webhooks %v, installed %+v", name, p.Webhooks, p.Rules["comp/vm"].Installed)
		}
	}
}

// BenchmarkComputePlan is one sync's planning with 1 000 rules over one
// dependent type, all protecting one type in one workspace.
func BenchmarkComputePlan(b *testing.B) {
	resolve := fakeResolve(map[string]string{"root:network": "net"})
	bindings := map[string]Binding{"net": {URL: "https://vw", ClaimAccepted: true, IndexClaimAccepted: true}, "comp": {URL: "https://vw", ClaimAccepted: true, IndexClaimAccepted: true}}
	rules := make([]RuleInput, 1000)
	for i := range rules {
		rules[i] = RuleInput{Key: fmt.Sprintf("comp/rule-%04d", i), Dependent: testVMs, Dependencies: []DependencyInput{{ExportPath: "root:network", GVR: testVPCs}}}
	}
	for b.Loop() {
		if p := ComputePlan(context.Background(), rules, bindings, resolve, unreadExports); len(p.Webhooks["net"]) != 1 {
			b.Fatalf("webhooks = %v", p.Webhooks)
		}
	}
}
