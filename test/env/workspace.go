package env

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Workspace is a kcp workspace that the environment created.
type Workspace struct {
	Name string
	// Path is the workspace path, for example "root:org:team".
	Path string
	// Cluster is the logical cluster name behind the path.
	Cluster string
	// URL is the workspace URL through the front-proxy.
	URL string
	// Shard is the name of the shard the workspace was scheduled on.
	Shard string
}

// WorkspaceOption adjusts a workspace before it is created.
type WorkspaceOption func(*tenancyv1alpha1.Workspace)

// OnShard pins the workspace to the shard with the given name.
func OnShard(name string) WorkspaceOption {
	return func(ws *tenancyv1alpha1.Workspace) {
		ws.Spec.Location = &tenancyv1alpha1.WorkspaceLocation{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": name}},
		}
	}
}

// OfType gives the workspace a workspace type, such as "universal".
func OfType(name, path string) WorkspaceOption {
	return func(ws *tenancyv1alpha1.Workspace) {
		ws.Spec.Type = &tenancyv1alpha1.WorkspaceTypeReference{Name: tenancyv1alpha1.WorkspaceTypeName(name), Path: path}
	}
}

func (e *Env) kcpClient() (kcpclientset.ClusterInterface, error) {
	cfg, err := e.AdminConfig("root")
	if err != nil {
		return nil, err
	}
	cfg.Host = e.FrontProxyURL
	return kcpclientset.NewForConfig(cfg)
}

// CreateWorkspace creates name in the workspace at parentPath and waits until
// it is ready. An existing workspace of that name is reused.
func (e *Env) CreateWorkspace(ctx context.Context, parentPath, name string, opts ...WorkspaceOption) (Workspace, error) {
	client, err := e.kcpClient()
	if err != nil {
		return Workspace{}, err
	}
	parent := logicalcluster.NewPath(parentPath)
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o(ws)
	}
	// A parent that has just become Ready may answer 404 for a moment,
	// until its shard serves the workspaces API in it; retry that.
	var createErr error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, createErr = client.Cluster(parent).TenancyV1alpha1().Workspaces().Create(ctx, ws, metav1.CreateOptions{})
		return !apierrors.IsNotFound(createErr), nil
	})
	if createErr != nil || err == nil {
		err = createErr // the server's answer says more than "timed out"
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return Workspace{}, fmt.Errorf("creating workspace %s in %s: %w", name, parentPath, err)
	}
	var got *tenancyv1alpha1.Workspace
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err = client.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors
		}
		return got.Status.Phase == corev1alpha1.LogicalClusterPhaseReady, nil
	})
	if err != nil {
		return Workspace{}, fmt.Errorf("waiting for workspace %s:%s to become ready (phase %q): %w", parentPath, name, phaseOf(got), err)
	}
	return Workspace{
		Name:    name,
		Path:    parent.Join(name).String(),
		Cluster: got.Spec.Cluster,
		URL:     got.Spec.URL,
		Shard:   e.shardOf(ctx, got),
	}, nil
}

// CreateWorkspacePath creates every missing workspace along path (for
// example "root:org:team:network") and returns the last one.
func (e *Env) CreateWorkspacePath(ctx context.Context, path string, opts ...WorkspaceOption) (Workspace, error) {
	segments := strings.Split(path, ":")
	if len(segments) < 2 || segments[0] != "root" {
		return Workspace{}, fmt.Errorf("workspace path %q must start with root: and name at least one workspace", path)
	}
	var ws Workspace
	parent := "root"
	for i, seg := range segments[1:] {
		var o []WorkspaceOption
		if i == len(segments)-2 {
			o = opts
		}
		var err error
		if ws, err = e.CreateWorkspace(ctx, parent, seg, o...); err != nil {
			return Workspace{}, err
		}
		parent = ws.Path
	}
	return ws, nil
}

// DeleteWorkspace deletes the workspace at path and waits until it is gone.
func (e *Env) DeleteWorkspace(ctx context.Context, path string) error {
	client, err := e.kcpClient()
	if err != nil {
		return err
	}
	p := logicalcluster.NewPath(path)
	parent, name := p.Split()
	err = client.Cluster(parent).TenancyV1alpha1().Workspaces().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting workspace %s: %w", path, err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// shardOf finds the shard hosting ws by matching its URL against the Shard
// objects, which is what kcp itself does when it schedules.
func (e *Env) shardOf(ctx context.Context, ws *tenancyv1alpha1.Workspace) string {
	if len(e.Shards) == 1 {
		return e.Shards[0].Name
	}
	if name := ws.Annotations[corev1alpha1.LogicalClusterShardAnnotationKey]; name != "" {
		return name
	}
	client, err := e.kcpClient()
	if err != nil {
		return ""
	}
	shards, err := client.Cluster(logicalcluster.NewPath("root")).CoreV1alpha1().Shards().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, s := range shards.Items {
		if s.Spec.BaseURL != "" && strings.HasPrefix(ws.Spec.URL, s.Spec.BaseURL) {
			return s.Name
		}
	}
	return ""
}

func phaseOf(ws *tenancyv1alpha1.Workspace) string {
	if ws == nil {
		return "unknown"
	}
	return string(ws.Status.Phase)
}

// UniqueName returns prefix plus a short random suffix, for workspaces and
// objects that tests on a shared environment must not collide on.
func UniqueName(prefix string) string {
	return fmt.Sprintf("%s-%s", prefix, randomSuffix())
}
