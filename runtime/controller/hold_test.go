package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// resolveAs resolves each path as its entry says: a cluster name, or an
// error.
type resolveAs map[string]any

func (r resolveAs) resolve(_ context.Context, path string) (string, error) {
	switch v := r[path].(type) {
	case string:
		return v, nil
	case error:
		return "", v
	}
	return "", fmt.Errorf("%w: %q (while resolving %q)", ErrWorkspaceNotFound, path, path)
}

// unreadAt is the resolver's failure to read path (forbidden, say), which
// last resolved to lastKnown ("" for never in this process).
func unreadAt(path, lastKnown string) error {
	return &UnreadError{Path: path, LastKnown: logicalcluster.Name(lastKnown), Err: fmt.Errorf("reading workspace %q: forbidden", path)}
}

// TestComputePlanKeepsUnreadWorkspaces: a dependency whose workspace path
// cannot be read goes on protecting the cluster it last resolved to, or is
// held for what is installed; only a workspace found gone stops
// protecting. The rule is never reported installed meanwhile.
func TestComputePlanKeepsUnreadWorkspaces(t *testing.T) {
	buckets := gvr("storage.io", "buckets")
	bindings := map[string]Binding{
		"net": {URL: "https://vw", ClaimAccepted: true},
		"sto": {URL: "https://vw", ClaimAccepted: true},
	}
	vm := func(deps ...DependencyInput) []RuleInput {
		return []RuleInput{{Key: "comp/vm", Dependent: testVMs, Dependencies: deps}}
	}
	network := DependencyInput{ExportPath: "root:org:network", GVR: testVPCs}
	storage := DependencyInput{ExportPath: "root:org:storage", GVR: buckets}
	gone := DependencyInput{ExportPath: "root:gone", GVR: testFWs}
	tests := []struct {
		name         string
		rules        []RuleInput
		resolve      resolveAs
		wantWebhooks map[string][]schema.GroupVersionResource
		wantHeld     []Held
		// wantResolved and wantInstalled are reasons; wantUnknown says
		// WebhookInstalled is Unknown.
		wantResolved, wantInstalled string
		wantUnknown                 bool
		wantUnread                  bool
	}{{
		name:          "resolves",
		rules:         vm(network),
		resolve:       resolveAs{"root:org:network": "net"},
		wantWebhooks:  map[string][]schema.GroupVersionResource{"net": {testVPCs}},
		wantResolved:  "Resolved",
		wantInstalled: "Installed",
	}, {
		name:          "the grant to resolve it removed: the cluster it last resolved to stays protected",
		rules:         vm(network),
		resolve:       resolveAs{"root:org:network": unreadAt("root:org:network", "net")},
		wantWebhooks:  map[string][]schema.GroupVersionResource{"net": {testVPCs}},
		wantResolved:  "ResolveFailed",
		wantInstalled: "WorkspacesUnreadable", wantUnknown: true,
		wantUnread: true,
	}, {
		name:          "never resolved by this process (a restart since): held for what is installed",
		rules:         vm(network),
		resolve:       resolveAs{"root:org:network": unreadAt("root:org:network", "")},
		wantWebhooks:  map[string][]schema.GroupVersionResource{},
		wantHeld:      []Held{{Rule: "comp/vm", GVR: testVPCs}},
		wantResolved:  "ResolveFailed",
		wantInstalled: "WorkspacesUnreadable", wantUnknown: true,
		wantUnread: true,
	}, {
		name:          "any failure but not found is a failure to read",
		rules:         vm(network),
		resolve:       resolveAs{"root:org:network": errors.New("connection refused")},
		wantWebhooks:  map[string][]schema.GroupVersionResource{},
		wantHeld:      []Held{{Rule: "comp/vm", GVR: testVPCs}},
		wantResolved:  "ResolveFailed",
		wantInstalled: "WorkspacesUnreadable", wantUnknown: true,
		wantUnread: true,
	}, {
		name:          "found gone: nothing to protect there",
		rules:         vm(gone),
		resolve:       resolveAs{},
		wantWebhooks:  map[string][]schema.GroupVersionResource{},
		wantResolved:  "WorkspaceNotFound",
		wantInstalled: "WorkspacesNotResolved",
	}, {
		name:          "one of two unreadable: both stay protected",
		rules:         vm(network, storage),
		resolve:       resolveAs{"root:org:network": "net", "root:org:storage": unreadAt("root:org:storage", "sto")},
		wantWebhooks:  map[string][]schema.GroupVersionResource{"net": {testVPCs}, "sto": {buckets}},
		wantResolved:  "ResolveFailed",
		wantInstalled: "WorkspacesUnreadable", wantUnknown: true,
		wantUnread: true,
	}, {
		name:          "one unreadable, one gone: the unreadable one stays protected",
		rules:         vm(network, gone),
		resolve:       resolveAs{"root:org:network": unreadAt("root:org:network", "net")},
		wantWebhooks:  map[string][]schema.GroupVersionResource{"net": {testVPCs}},
		wantResolved:  "WorkspaceNotFound",
		wantInstalled: "WorkspacesUnreadable", wantUnknown: true,
		wantUnread: true,
	}, {
		name:          "the last known workspace no longer binds the export: reported, nothing to write there",
		rules:         vm(network),
		resolve:       resolveAs{"root:org:network": unreadAt("root:org:network", "unbound")},
		wantWebhooks:  map[string][]schema.GroupVersionResource{},
		wantResolved:  "ResolveFailed",
		wantInstalled: "ExportNotBound",
		wantUnread:    true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ComputePlan(context.Background(), tt.rules, bindings, tt.resolve.resolve, servedExports)
			if !reflect.DeepEqual(p.Webhooks, tt.wantWebhooks) {
				t.Errorf("webhooks = %v, want %v", p.Webhooks, tt.wantWebhooks)
			}
			for cluster := range tt.wantWebhooks {
				if got := p.Scopes[cluster][tt.wantWebhooks[cluster][0]]; !slices.Equal(got, []string{"comp"}) {
					t.Errorf("scope in %s = %v, want the rule's workspace", cluster, got)
				}
			}
			if !slices.Equal(p.Held, tt.wantHeld) {
				t.Errorf("held = %v, want %v", p.Held, tt.wantHeld)
			}
			rp := p.Rules["comp/vm"]
			if rp.Resolved.OK != (tt.wantResolved == "Resolved") || rp.Resolved.Reason != tt.wantResolved {
				t.Errorf("WorkspacesResolved = %+v, want reason %s", rp.Resolved, tt.wantResolved)
			}
			if rp.Installed.OK != (tt.wantInstalled == "Installed") || rp.Installed.Unknown != tt.wantUnknown || rp.Installed.Reason != tt.wantInstalled {
				t.Errorf("WebhookInstalled = %+v, want reason %s (unknown: %v)", rp.Installed, tt.wantInstalled, tt.wantUnknown)
			}
			if _, unread := rp.Unread[UnreadWorkspace]; unread != tt.wantUnread {
				t.Errorf("unread = %v, want a workspace unread: %v", rp.Unread, tt.wantUnread)
			}
			if rp.Unread[UnreadExport] != "" {
				t.Errorf("the exports were read, but the plan says %q", rp.Unread[UnreadExport])
			}
			// Whether the types are served cannot be told where the
			// workspace cannot be read: a verdict reached stands.
			if tt.wantUnread && rp.Served.Unknown && !rp.Served.Keep {
				t.Errorf("TypesServed = %+v: replaces a verdict while the workspace cannot be read", rp.Served)
			}
		})
	}
}

// TestComputePlanReportsUnreadExports: an export that cannot be read marks
// the rule unread; one that does not exist is a verdict, not a failure.
func TestComputePlanReportsUnreadExports(t *testing.T) {
	bindings := map[string]Binding{
		"net":  {URL: "https://vw", ClaimAccepted: true, TypesClaimAccepted: true},
		"comp": {URL: "https://vw", ClaimAccepted: true, TypesClaimAccepted: true},
	}
	rule := RuleInput{Key: "comp/vm", Dependent: testVMs, DependentKind: "VirtualMachine", DependentExport: "compute.io",
		Dependencies: []DependencyInput{{ExportPath: "root:network", ExportName: "network.io", GVR: testVPCs, FieldPath: ".spec.vpc"}}}
	for _, tt := range []struct {
		name       string
		err        error
		wantUnread bool
	}{
		{"forbidden", errors.New("apiexports.apis.kcp.io is forbidden"), true},
		{"not found", fmt.Errorf("%w: network.io", process.ErrExportNotFound), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exports := func(_ context.Context, cluster, name string) (*v1alpha1.ExportTypes, error) { return nil, tt.err }
			p := ComputePlan(context.Background(), []RuleInput{rule}, bindings, fakeResolve(map[string]string{"root:network": "net"}), exports)
			rp := p.Rules["comp/vm"]
			if _, unread := rp.Unread[UnreadExport]; unread != tt.wantUnread {
				t.Errorf("unread = %v, want an export unread: %v", rp.Unread, tt.wantUnread)
			}
			if !rp.Installed.OK || len(p.Webhooks["net"]) != 1 {
				t.Errorf("what the exports serve decides readiness, never what is installed: %+v, %v", rp.Installed, p.Webhooks)
			}
		})
	}
}

// TestKeepInstalled: a held resource keeps every installed deletion entry
// that may be its rule's, exactly as it is installed, so that a run
// neither removes nor rewrites it; entries that cannot be the rule's go as
// before.
func TestKeepInstalled(t *testing.T) {
	name := testSettings.ConfigurationName
	installed := func(cluster string, protected Protected) process.ShardObject {
		u, err := toUnstructured(DesiredScopedWebhookConfiguration(testSettings, protected, nil), "ValidatingWebhookConfiguration")
		if err != nil {
			t.Fatal(err)
		}
		return process.ShardObject{URL: "https://vw", Cluster: cluster, Obj: u}
	}
	network := func(gvrs ...schema.GroupVersionResource) []DependencyInput {
		var deps []DependencyInput
		for _, g := range gvrs {
			deps = append(deps, DependencyInput{ExportPath: "root:org:network", GVR: g})
		}
		return deps
	}
	held := RuleInput{Key: "comp/vm", Dependent: testVMs, Dependencies: network(testVPCs)}
	otherHeld := RuleInput{Key: "apps/app", Dependent: gvr("apps.io", "apps"), Dependencies: network(testVPCs, testFWs)}
	// A rule that names the logical cluster itself, which resolves
	// without reading any workspace.
	otherResolved := RuleInput{Key: "apps/app", Dependent: gvr("apps.io", "apps"), Dependencies: []DependencyInput{
		{ExportPath: "net", GVR: testVPCs}, {ExportPath: "net", GVR: testFWs}}}
	bound := map[string]Binding{"net": {URL: "https://vw", ClaimAccepted: true}}
	tests := []struct {
		name      string
		installed []process.ShardObject
		rules     []RuleInput
		bindings  map[string]Binding
		// wantKept: the configuration in net is kept; false: it is
		// removed.
		wantKept bool
		// rescoped: it is kept sending the same requests to the same
		// endpoint, but its URL now names the held rule's workspace.
		rescoped bool
	}{{
		name:      "installed for the rule's workspace",
		installed: []process.ShardObject{installed("net", Protected{testVPCs: admission.Of("comp")})},
		rules:     []RuleInput{held},
		bindings:  bound,
		wantKept:  true,
	}, {
		name:      "installed for two rules, both held",
		installed: []process.ShardObject{installed("net", Protected{testVPCs: admission.Of("apps", "comp"), testFWs: admission.Of("apps")})},
		rules:     []RuleInput{held, otherHeld},
		bindings:  bound,
		wantKept:  true,
	}, {
		name:      "installed together with a rule that resolves",
		installed: []process.ShardObject{installed("net", Protected{testVPCs: admission.Of("apps", "comp"), testFWs: admission.Of("apps")})},
		rules:     []RuleInput{held, otherResolved},
		bindings:  bound,
		wantKept:  true,
	}, {
		name:      "written by a controller that named no scope",
		installed: []process.ShardObject{installed("net", Protected{testVPCs: admission.Unnamed})},
		rules:     []RuleInput{held},
		bindings:  bound,
		wantKept:  true,
		rescoped:  true,
	}, {
		name:      "the entry is another workspace's rules'",
		installed: []process.ShardObject{installed("net", Protected{testVPCs: admission.Of("apps")})},
		rules:     []RuleInput{held},
		bindings:  bound,
	}, {
		name:      "the entry is another resource's",
		installed: []process.ShardObject{installed("net", Protected{testFWs: admission.Of("comp")})},
		rules:     []RuleInput{held},
		bindings:  bound,
	}, {
		name:      "the workspace no longer accepts the claim",
		installed: []process.ShardObject{installed("net", Protected{testVPCs: admission.Of("comp")})},
		rules:     []RuleInput{held},
		bindings:  map[string]Binding{"net": {URL: "https://vw"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resolve := resolveAs{"root:org:network": unreadAt("root:org:network", ""), "net": "net"}
			p := ComputePlan(context.Background(), tt.rules, tt.bindings, resolve.resolve, servedExports)
			p.KeepInstalled(installedProtection(tt.installed, name), tt.bindings)

			jobs := configJobs(p.Webhooks, tt.installed, name)
			removed := slices.ContainsFunc(jobs, func(j configJob) bool { return j.stale != nil && j.cluster == "net" })
			if removed == tt.wantKept {
				t.Fatalf("configuration in net removed: %v, want kept: %v (plan %v)", removed, tt.wantKept, p.Webhooks)
			}
			if !tt.wantKept {
				return
			}
			existing, err := decodeValidating(tt.installed[0])
			if err != nil {
				t.Fatal(err)
			}
			desired := DesiredScopedWebhookConfiguration(testSettings, p.Protected("net"), nil)
			switch {
			case !tt.rescoped && WebhookConfigurationDrifted(existing, desired):
				t.Errorf("the kept configuration would be rewritten:\n got %+v\nwant %+v", desired.Webhooks, existing.Webhooks)
			case !reflect.DeepEqual(coveredResources(desired), coveredResources(existing)) || webhookTargetChanged(existing, desired):
				t.Errorf("the kept configuration would cover %v at %s, want %v at %s", coveredResources(desired), *desired.Webhooks[0].ClientConfig.URL,
					coveredResources(existing), *existing.Webhooks[0].ClientConfig.URL)
			}
			if !slices.Contains(p.Rules["comp/vm"].Targets, "net") {
				t.Errorf("the held rule's targets %v leave out net, where its entries are kept", p.Rules["comp/vm"].Targets)
			}
		})
	}
}

func decodeValidating(o process.ShardObject) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	return c, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, c)
}

// servedExports is the ExportFunc of tests whose exports serve the rules'
// types as far as they matter: every export is read, and serves nothing.
func servedExports(_ context.Context, _, name string) (*v1alpha1.ExportTypes, error) {
	return &v1alpha1.ExportTypes{Name: name}, nil
}
