package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workspaceNotFoundError says that a path names no workspace, and which
// step of the path is missing.
type workspaceNotFoundError struct {
	Path    string
	Missing string
}

func (e *workspaceNotFoundError) Error() string {
	if e.Missing == e.Path {
		return fmt.Sprintf("workspace %q does not exist", e.Path)
	}
	return fmt.Sprintf("workspace %q does not exist, so %q cannot exist either", e.Missing, e.Path)
}

// workspaceInfo is what the provider learns about a workspace.
type workspaceInfo struct {
	Path    string
	Name    string
	Cluster string
	Phase   string
	URL     string
	Type    string
	Shard   string
}

// readWorkspace reads the workspace at path by reading its Workspace object
// in the parent. When that fails because some workspace along the path does
// not exist, it walks the path to say which one.
func readWorkspace(ctx context.Context, conn *Connection, p string) (*workspaceInfo, error) {
	kcp, err := conn.KCP()
	if err != nil {
		return nil, err
	}
	if p == "root" {
		return readRoot(ctx, conn, kcp)
	}
	parent, name := logicalcluster.NewPath(p).Split()
	ws, err := kcp.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			if missing := firstMissing(ctx, conn, p); missing != "" {
				return nil, &workspaceNotFoundError{Path: p, Missing: missing}
			}
		}
		return nil, err
	}
	return describeWorkspace(p, ws), nil
}

// firstMissing walks path from root and returns the first prefix that names
// no workspace, or "" when every step exists (the error was something else).
func firstMissing(ctx context.Context, conn *Connection, p string) string {
	kcp, err := conn.KCP()
	if err != nil {
		return ""
	}
	segments := strings.Split(p, ":")
	for i := 1; i < len(segments); i++ {
		parent := logicalcluster.NewPath(strings.Join(segments[:i], ":"))
		_, err := kcp.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, segments[i], metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return parent.Join(segments[i]).String()
		case err != nil:
			return ""
		}
	}
	return ""
}

func describeWorkspace(p string, ws *tenancyv1alpha1.Workspace) *workspaceInfo {
	info := &workspaceInfo{
		Path:    p,
		Name:    ws.Name,
		Cluster: ws.Spec.Cluster,
		Phase:   string(ws.Status.Phase),
		URL:     ws.Spec.URL,
		Shard:   ws.Annotations[corev1alpha1.LogicalClusterShardAnnotationKey],
	}
	if t := ws.Spec.Type; t != nil {
		info.Type = string(t.Name)
		if t.Path != "" {
			info.Type = t.Path + ":" + string(t.Name)
		}
	}
	return info
}

// readRoot describes the root workspace, which has no Workspace object:
// its LogicalCluster gives the phase, and the shard named "root" (kcp's
// convention, or the only shard) hosts it.
func readRoot(ctx context.Context, conn *Connection, kcp kcpclientset.ClusterInterface) (*workspaceInfo, error) {
	root := logicalcluster.NewPath("root")
	lc, err := kcp.Cluster(root).CoreV1alpha1().LogicalClusters().Get(ctx, corev1alpha1.LogicalClusterName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	// root is of kcp's built-in "root" WorkspaceType, defined in root itself.
	info := &workspaceInfo{Path: "root", Name: "root", Cluster: "root", Phase: string(lc.Status.Phase), URL: conn.Host() + "/clusters/root", Type: "root:root"}
	shards, err := kcp.Cluster(root).CoreV1alpha1().Shards().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, s := range shards.Items {
		if s.Name == "root" || len(shards.Items) == 1 {
			info.Shard = s.Name
		}
	}
	return info, nil
}

// readResourceRE is resource.group, resource for the core group, or
// *.group for a whole group.
var readResourceRE = regexp.MustCompile(`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
