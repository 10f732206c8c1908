package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/kcp-dev/multicluster-provider/apiexport"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// TestAPIExportProviderBeforeBindings: a multicluster manager with the kcp
// APIExport provider, started as the webhook's user for the dep-ctrl export
// before any workspace binds it, engages a workspace that binds it later,
// so its reconciler sees a rule created there.
//
// The export's endpoint slice names a shard as soon as the shard holds a
// binding, and a watch of the shard's virtual workspace can fail for a
// while after that: the virtual workspace answers 404 until it has read
// the export from the cache server (a moment after the first binding), and
// refuses a user not yet granted the export's content. The provider tries
// the shard when the slice changes; it must go on trying after a failure,
// since the slice may not change again. The test holds the grant of the
// export's content until the slice has named the shard and settled, so
// that the first attempt fails every time, whichever way the race between
// binding and cache replication goes.
func TestAPIExportProviderBeforeBindings(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top := &Topology{Env: e}
	prefix := env.UniqueName("mcp")
	var err error
	top.DepCtrl, err = e.CreateWorkspace(ctx, "root", prefix+"-depctrl", env.OnShard(e.Shards[0].Name))
	check.Must(t, err)
	// The provider workspace is on another shard than the export, where
	// the virtual workspace learns of the export through the cache server.
	shard := e.Shards[len(e.Shards)-1].Name
	provider, err := e.CreateWorkspace(ctx, "root", prefix+"-provider", env.OnShard(shard))
	check.Must(t, err)
	access := rbac.ExportAccess(v1alpha1.DefaultAPIExportName, []rbacv1.Subject{rbac.User(env.WebhookUser)})
	apply(ctx, t, top.admin(t, top.DepCtrl.Path),
		string(v1alpha1.APIResourceSchemaYAML()), string(v1alpha1.APIExportYAML()), toYAML(t, withoutExportContent(access)))

	logs := &lockedLog{}
	var seen sync.Map // "cluster/name" of every rule the reconciler saw
	startAPIExportManager(ctx, t, e.IdentityConfig(e.MustIdentity(env.WebhookUser), top.DepCtrl.Path),
		funcr.New(logs.write, funcr.Options{}), func(req mcreconcile.Request) { seen.Store(req.ClusterName.String()+"/"+req.Name, true) })
	defer func() {
		if t.Failed() {
			t.Logf("the manager's log:\n%s", logs.String())
		}
		runtimetest.KeepLog(t, "manager.log", []byte(logs.String()))
	}()

	apply(ctx, t, top.admin(t, provider.Path), depCtrlBindingYAML(top.DepCtrl.Path))
	check.Eventually(ctx, t, time.Minute, "the endpoint slice to name the provider's shard", func() error {
		slice, err := top.dynamicFor(t, top.DepCtrl.Path).Resource(endpointSlicesGVR).Get(ctx, v1alpha1.DefaultAPIExportName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if endpoints, _, _ := unstructured.NestedSlice(slice.Object, "status", "endpoints"); len(endpoints) == 0 {
			return fmt.Errorf("no endpoints yet")
		}
		return nil
	})
	// The provider reads the slice through a watch and tries the shard at
	// once; kcp writes the slice's status a few times in a row.
	time.Sleep(5 * time.Second)
	apply(ctx, t, top.admin(t, top.DepCtrl.Path), toYAML(t, access))

	top.waitServed(ctx, t, provider, rulesGVR)
	top.createRule(ctx, t, provider, ruleObject("needs-vpc", fixtures.VirtualMachines, fixtures.VPCs, provider.Path, ".spec.vpcRef.name"))
	check.Eventually(ctx, t, 2*time.Minute, "the provider's reconciler to see the rule in "+provider.Path+" on "+shard, func() error {
		if _, ok := seen.Load(provider.Cluster + "/needs-vpc"); !ok {
			return fmt.Errorf("not seen yet")
		}
		return nil
	})
}

var endpointSlicesGVR = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiexportendpointslices"}

// withoutExportContent is g without its rules on the export's content:
// its subjects may read the endpoint slice, but the export's virtual
// workspaces refuse them.
func withoutExportContent(g rbac.Grant) rbac.Grant {
	role := g.Role.DeepCopy()
	role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "apiexports/content") })
	return rbac.Grant{Role: role, Binding: g.Binding}
}

// startAPIExportManager starts, until ctx ends, a multicluster manager with
// the APIExport provider for the dep-ctrl export, reached with cfg, whose one
// controller hands every DependencyRule request to saw. The test waits for
// the manager to stop before it ends.
func startAPIExportManager(ctx context.Context, t *testing.T, cfg *rest.Config, log logr.Logger, saw func(mcreconcile.Request)) {
	t.Helper()
	scheme := runtime.NewScheme()
	check.Must(t, v1alpha1.AddToScheme(scheme))
	check.Must(t, apisv1alpha1.AddToScheme(scheme))
	provider, err := apiexport.New(cfg, v1alpha1.DefaultAPIExportName, apiexport.Options{Scheme: scheme, Log: &log})
	check.Must(t, err)
	mgr, err := mcmanager.New(cfg, provider, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 log,
	})
	check.Must(t, err)
	check.Must(t, mcbuilder.ControllerManagedBy(mgr).
		Named("rules").
		For(&v1alpha1.DependencyRule{}).
		Complete(mcreconcile.Func(func(_ context.Context, req mcreconcile.Request) (ctrl.Result, error) {
			saw(req)
			return ctrl.Result{}, nil
		})))
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("the manager stopped: %v", err)
		}
	})
}

// lockedLog collects log lines written from several goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) write(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
