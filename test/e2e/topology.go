package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// Topology is the kcp side of an installation, bootstrapped the way a
// platform team would: the dep-ctrl workspace with the export, provider
// workspaces that bind it, root and per-shard RBAC, and consumers.
type Topology struct {
	Env       *env.Env
	DepCtrl   env.Workspace
	Org       env.Workspace
	Network   env.Workspace // nested: root:<org>:network
	Compute   env.Workspace
	Consumers []env.Workspace
}

type topologyOptions struct {
	placement      []env.WorkspaceOption
	compute        []env.WorkspaceOption
	nestedDepCtrl  bool
	beforeBindings func(*Topology)
}

type topologyOption func(*topologyOptions)

// placedOn schedules the dep-ctrl, org, network and compute workspaces
// (not the consumers) with opts, such as env.OnShard.
func placedOn(opts ...env.WorkspaceOption) topologyOption {
	return func(o *topologyOptions) { o.placement = append(o.placement, opts...) }
}

// computeOn schedules the compute workspace, which holds the rules and
// the reference index configuration, with opts instead of placedOn's.
func computeOn(opts ...env.WorkspaceOption) topologyOption {
	return func(o *topologyOptions) { o.compute = append(o.compute, opts...) }
}

// nestedDepCtrl puts the dep-ctrl workspace below a parent of its own
// (root:<prefix>-platform:deps, as root:platform:deps in the guides), on
// which nothing is granted, instead of below root.
func nestedDepCtrl() topologyOption {
	return func(o *topologyOptions) { o.nestedDepCtrl = true }
}

// beforeBindings runs f once the dep-ctrl export exists and before any
// workspace binds it, as in the documented order where the runtime is
// deployed before the providers bind the export.
func beforeBindings(f func(*Topology)) topologyOption {
	return func(o *topologyOptions) { o.beforeBindings = f }
}

// setupTopology creates a fresh topology with unique workspace names, so
// tests share a kcp without sharing state. Consumers are spread over the
// shards; options place the other workspaces (by default kcp chooses) or
// nest the dep-ctrl workspace.
func setupTopology(ctx context.Context, t *testing.T, e *env.Env, options ...topologyOption) *Topology {
	t.Helper()
	top := &Topology{Env: e}
	var o topologyOptions
	for _, f := range options {
		f(&o)
	}
	opts := o.placement
	var err error
	prefix := env.UniqueName("e2e")
	top.Org, err = e.CreateWorkspace(ctx, "root", prefix+"-org", opts...)
	check.Must(t, err)
	if o.nestedDepCtrl {
		// A parent of its own, which no grant names: the runtime must
		// need nothing in the dep-ctrl workspace's parents.
		platform, err := e.CreateWorkspace(ctx, "root", prefix+"-platform", opts...)
		check.Must(t, err)
		top.DepCtrl, err = e.CreateWorkspace(ctx, platform.Path, "deps", opts...)
		check.Must(t, err)
	} else {
		top.DepCtrl, err = e.CreateWorkspace(ctx, "root", prefix+"-depctrl", opts...)
	}
	check.Must(t, err)
	top.Network, err = e.CreateWorkspace(ctx, top.Org.Path, "network", opts...)
	check.Must(t, err)
	computeOpts := opts
	if o.compute != nil {
		computeOpts = o.compute
	}
	top.Compute, err = e.CreateWorkspace(ctx, "root", prefix+"-compute", computeOpts...)
	check.Must(t, err)
	for i, s := range e.Shards {
		ws, err := e.CreateWorkspace(ctx, "root", fmt.Sprintf("%s-consumer-%d", prefix, i), env.OnShard(s.Name))
		check.Must(t, err)
		top.Consumers = append(top.Consumers, ws)
	}

	runtimeUsers := []rbacv1.Subject{rbac.User(env.ControllerUser), rbac.User(env.WebhookUser)}
	controllerOnly := []rbacv1.Subject{rbac.User(env.ControllerUser)}

	// The dep-ctrl export and what the runtime may do with it.
	apply(ctx, t, top.admin(t, top.DepCtrl.Path),
		string(v1alpha1.APIResourceSchemaYAML()), string(v1alpha1.APIExportYAML()),
		toYAML(t, rbac.ExportAccess(v1alpha1.DefaultAPIExportName, runtimeUsers)))
	// Path resolution: read workspaces in root and in the intermediate org.
	for _, p := range []string{"root", top.Org.Path} {
		apply(ctx, t, top.admin(t, p), toYAML(t, rbac.WorkspaceReader(controllerOnly)))
	}
	// The webhook reads dependents on every shard.
	for _, s := range e.Shards {
		cfg, err := e.ShardAdminConfig(s.Name, "system:admin")
		check.Must(t, err)
		apply(ctx, t, cfg, toYAML(t, rbac.ShardReader([]rbacv1.Subject{rbac.User(env.WebhookUser)}, rbac.ShardAccess{})))
	}

	if o.beforeBindings != nil {
		o.beforeBindings(top)
	}
	// Providers export their types and bind the dep-ctrl export.
	apply(ctx, t, top.admin(t, top.Network.Path), fixtures.ExportYAML(fixtures.VPCs, fixtures.FirewallRules, fixtures.Regions), depCtrlBindingYAML(top.DepCtrl.Path))
	apply(ctx, t, top.admin(t, top.Compute.Path), fixtures.ExportYAML(fixtures.VirtualMachines, fixtures.ManagedDBs), depCtrlBindingYAML(top.DepCtrl.Path))
	for _, c := range top.Consumers {
		top.bindConsumer(ctx, t, c)
	}
	// A binding serves its types a moment after it is created.
	for _, ws := range []env.Workspace{top.Network, top.Compute} {
		top.waitServed(ctx, t, ws, rulesGVR)
	}
	for _, c := range top.Consumers {
		top.waitConsumerServed(ctx, t, c)
	}
	return top
}

// waitServed waits until ws serves gvr.
func (top *Topology) waitServed(ctx context.Context, t *testing.T, ws env.Workspace, gvr schema.GroupVersionResource) {
	t.Helper()
	check.Eventually(ctx, t, time.Minute, gvr.Resource+" to be served in "+ws.Path, func() error {
		_, err := top.dynamicFor(t, ws.Path).Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
}

// bindConsumer makes ws a consumer: it binds both providers and gets the
// namespace apps.
func (top *Topology) bindConsumer(ctx context.Context, t *testing.T, ws env.Workspace) {
	t.Helper()
	apply(ctx, t, top.admin(t, ws.Path),
		fixtures.BindingYAML("network", top.Network.Path, fixtures.VPCs.Group),
		fixtures.BindingYAML("compute", top.Compute.Path, fixtures.VirtualMachines.Group),
		"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n")
}

// newConsumer creates a consumer workspace of its own under root, for a
// test that deletes it or its bindings, and waits until it serves both
// bound types: a binding is applied at once, its types served a moment
// later.
func (top *Topology) newConsumer(ctx context.Context, t *testing.T, prefix string, opts ...env.WorkspaceOption) env.Workspace {
	t.Helper()
	ws, err := top.Env.CreateWorkspace(ctx, "root", env.UniqueName(prefix), opts...)
	check.Must(t, err)
	top.bindConsumer(ctx, t, ws)
	top.waitConsumerServed(ctx, t, ws)
	return ws
}

// waitConsumerServed waits until the consumer ws serves the types
// bindConsumer binds.
func (top *Topology) waitConsumerServed(ctx context.Context, t *testing.T, ws env.Workspace) {
	t.Helper()
	top.waitServed(ctx, t, ws, fixtures.VPCs.GVR())
	top.waitServed(ctx, t, ws, fixtures.VirtualMachines.GVR())
}

func (top *Topology) admin(t *testing.T, path string) *rest.Config {
	t.Helper()
	cfg, err := top.Env.AdminConfig(path)
	check.Must(t, err)
	return cfg
}

// dynamicFor returns an admin dynamic client for a workspace.
func (top *Topology) dynamicFor(t *testing.T, path string) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(top.admin(t, path))
	check.Must(t, err)
	return c
}

// depCtrlBindingYAML binds the dep-ctrl export and accepts its claims,
// the read-only ones on APIExports and APIResourceSchemas included.
func depCtrlBindingYAML(depCtrlPath string) string {
	verbs := "[" + strings.Join(v1alpha1.ClaimVerbs, ", ") + "]"
	eventVerbs := "[" + strings.Join(v1alpha1.EventClaimVerbs, ", ") + "]"
	typeVerbs := "[" + strings.Join(v1alpha1.TypeClaimVerbs, ", ") + "]"
	return fmt.Sprintf(`apiVersion: apis.kcp.io/v1alpha2
kind: APIBinding
metadata:
  name: dep-ctrl
spec:
  reference:
    export:
      path: %[1]s
      name: %[2]s
  permissionClaims:
  - group: admissionregistration.k8s.io
    resource: validatingwebhookconfigurations
    verbs: %[3]s
    selector:
      matchAll: true
    state: Accepted
  - group: admissionregistration.k8s.io
    resource: mutatingwebhookconfigurations
    verbs: %[3]s
    selector:
      matchAll: true
    state: Accepted
  - resource: events
    verbs: %[4]s
    selector:
      matchAll: true
    state: Accepted
  - group: apis.kcp.io
    resource: apiexports
    verbs: %[5]s
    selector:
      matchAll: true
    state: Accepted
  - group: apis.kcp.io
    resource: apiresourceschemas
    verbs: %[5]s
    selector:
      matchAll: true
    state: Accepted
`, depCtrlPath, v1alpha1.DefaultAPIExportName, verbs, eventVerbs, typeVerbs)
}

func apply(ctx context.Context, t *testing.T, cfg *rest.Config, docs ...string) {
	t.Helper()
	for _, d := range docs {
		check.Must(t, fixtures.ApplyYAML(ctx, cfg, d))
	}
}

func toYAML(t *testing.T, g rbac.Grant) string {
	t.Helper()
	s, err := fixtures.GrantYAML(g)
	check.Must(t, err)
	return s
}
