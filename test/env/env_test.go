package env

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// These tests start and stop environments of their own to prove the
// lifecycle; they never attach to DEPCTRL_TEST_ENV.

func requireIntegration(t *testing.T) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" && os.Getenv("DEPCTRL_INTEGRATION") == "" {
		t.Skip("starts kcp: set TF_ACC=1 or DEPCTRL_INTEGRATION=1")
	}
}

func TestSingleShardLifecycle(t *testing.T) {
	requireIntegration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	start := time.Now()
	e, err := StartSingleShard(ctx, Options{})
	if err != nil {
		t.Fatalf("starting: %v", err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	t.Logf("single shard ready in %s at %s", time.Since(start).Round(time.Millisecond), e.FrontProxyURL)

	nested, err := e.CreateWorkspacePath(ctx, "root:"+UniqueName("org")+":team:network")
	if err != nil {
		t.Fatalf("creating nested workspaces: %v", err)
	}
	if !strings.HasSuffix(nested.Path, ":team:network") || nested.Cluster == "" || nested.Shard != "root" {
		t.Fatalf("unexpected workspace %+v", nested)
	}
	assertIdentitiesAreNotAdmin(ctx, t, e, nested)

	attachedEnv, err := Attach(e.Dir)
	if err != nil {
		t.Fatalf("attaching to the running environment: %v", err)
	}
	if attachedEnv.FrontProxyURL != e.FrontProxyURL || !attachedEnv.Attached() {
		t.Fatalf("attached environment differs: %+v", attachedEnv)
	}
	if err := attachedEnv.Stop(); err != nil {
		t.Fatalf("stopping an attached environment must be a no-op: %v", err)
	}
	if err := e.WaitReady(10 * time.Second); err != nil {
		t.Fatalf("environment stopped by an attached handle: %v", err)
	}

	dir := e.Dir
	if err := e.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	if ports := e.ListeningPorts(); len(ports) > 0 {
		t.Fatalf("ports still listening after Stop: %v", ports)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory %s left behind after Stop (err=%v)", dir, err)
	}
}

func TestTwoShardLifecycle(t *testing.T) {
	requireIntegration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	start := time.Now()
	e, err := StartTwoShards(ctx, Options{ReadyTimeout: 8 * time.Minute})
	if err != nil {
		t.Fatalf("starting: %v", err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	t.Logf("two shards ready in %s at %s", time.Since(start).Round(time.Millisecond), e.FrontProxyURL)

	ws, err := e.CreateWorkspace(ctx, "root", UniqueName("far"), OnShard("shard-1"))
	if err != nil {
		t.Fatalf("creating a workspace on shard-1: %v", err)
	}
	if ws.Shard != "shard-1" {
		t.Fatalf("workspace scheduled on %q, want shard-1", ws.Shard)
	}
	local, err := e.CreateWorkspace(ctx, "root", UniqueName("near"), OnShard("root"))
	if err != nil {
		t.Fatalf("creating a workspace on the root shard: %v", err)
	}
	if local.Shard != "root" {
		t.Fatalf("workspace scheduled on %q, want root", local.Shard)
	}
	assertIdentitiesAreNotAdmin(ctx, t, e, ws)

	// Each shard's system:admin is reachable directly with the shard's
	// system:masters credentials, and not through the front-proxy.
	for _, s := range e.Shards {
		cfg, err := e.ShardAdminConfig(s.Name, "system:admin")
		if err != nil {
			t.Fatal(err)
		}
		cs := kubernetes.NewForConfigOrDie(cfg)
		if _, err := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			t.Fatalf("listing cluster roles in %s's system:admin: %v", s.Name, err)
		}
	}

	if err := e.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	if ports := e.ListeningPorts(); len(ports) > 0 {
		t.Fatalf("ports still listening after Stop: %v", ports)
	}
}

// assertIdentitiesAreNotAdmin proves the runtime identities authenticate but
// are refused what no RBAC granted them.
func assertIdentitiesAreNotAdmin(ctx context.Context, t *testing.T, e *Env, ws Workspace) {
	t.Helper()
	for _, user := range []string{ControllerUser, WebhookUser, TenantUser} {
		id, err := e.Identity(user)
		if err != nil {
			t.Fatal(err)
		}
		cfg := e.IdentityConfig(id, "root")
		cfg.Host = e.FrontProxyURL
		client, err := kcpclientset.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Every authenticated user may read workspaces in root (kcp's
		// default tenancy:reader binding), but not create them.
		_, err = client.Cluster(logicalcluster.NewPath("root")).TenancyV1alpha1().Workspaces().Create(ctx,
			&tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: UniqueName("intruder")}}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("%s creating a workspace in root: want Forbidden, got %v", user, err)
		}
		cs := kubernetes.NewForConfigOrDie(e.IdentityConfig(id, ws.Path))
		_, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("%s listing configmaps in %s: want Forbidden, got %v", user, ws.Path, err)
		}
		if !strings.Contains(err.Error(), user) {
			t.Fatalf("the refusal should name the authenticated user %q: %v", user, err)
		}
	}
	admin, err := e.AdminConfig(ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(admin).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("admin listing configmaps in %s: %v", ws.Path, err)
	}
}
