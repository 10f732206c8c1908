package controller

// The resolver maps kcp workspace paths such as "root:org:network" to the
// logical cluster names that virtual workspaces address.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrWorkspaceNotFound wraps every error for a path that does not exist.
var ErrWorkspaceNotFound = errors.New("workspace not found")

// UnreadError is the error for a path that could not be read: reading a
// workspace along it was forbidden, failed or timed out, or one is not
// scheduled yet. Unlike ErrWorkspaceNotFound it says nothing about whether the
// workspace is there, so a caller must not act as if it were gone.
type UnreadError struct {
	// Path is the path being resolved.
	Path string
	// LastKnown is the logical cluster Path last resolved to in this
	// process, however long ago, or "" when it never did (or was since
	// found gone): what the caller may go on using while reads fail.
	LastKnown logicalcluster.Name
	Err       error
}

func (e *UnreadError) Error() string { return e.Err.Error() }

func (e *UnreadError) Unwrap() error { return e.Err }

// WorkspaceGetter reads one Workspace object in the workspace at parent.
type WorkspaceGetter interface {
	GetWorkspace(ctx context.Context, parent logicalcluster.Path, name string) (*tenancyv1alpha1.Workspace, error)
}

// Resolver walks a workspace path one segment at a time, reading each
// Workspace in its parent, so nested paths resolve as well as direct
// children of root. Results are cached for a while; callers that find a
// cached cluster gone call Forget. An expired result is not used to
// resolve, but is kept as the path's last known cluster, which a failure
// to read reports (UnreadError) until a read finds the path gone.
type Resolver struct {
	getter WorkspaceGetter
	ttl    time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]resolved
}

type resolved struct {
	cluster logicalcluster.Name
	uid     string
	expires time.Time
}

// NewResolver returns a resolver whose cache entries live for ttl.
func NewResolver(getter WorkspaceGetter, ttl time.Duration) *Resolver {
	return &Resolver{getter: getter, ttl: ttl, now: time.Now, cache: map[string]resolved{}}
}

// Resolve returns the logical cluster name behind path. A path without a
// colon that is not "root" is taken to be a logical cluster name already.
func (r *Resolver) Resolve(ctx context.Context, path string) (logicalcluster.Name, error) {
	if path == "" {
		return "", fmt.Errorf("empty workspace path")
	}
	if !strings.Contains(path, ":") {
		return logicalcluster.Name(path), nil
	}
	if e, ok := r.cached(path); ok {
		return e.cluster, nil
	}
	segments := strings.Split(path, ":")
	// Start from the longest cached prefix: sibling rules share parents.
	start, parent := 1, logicalcluster.NewPath(segments[0])
	for i := len(segments) - 1; i >= 1; i-- {
		if e, ok := r.cached(strings.Join(segments[:i], ":")); ok && i > 1 {
			start, parent = i, e.cluster.Path()
			break
		}
	}
	var cluster logicalcluster.Name
	for i := start; i < len(segments); i++ {
		prefix := strings.Join(segments[:i+1], ":")
		ws, err := r.getter.GetWorkspace(ctx, parent, segments[i])
		if apierrors.IsNotFound(err) {
			// Gone: nothing below it is known any more.
			r.Forget(prefix)
			return "", fmt.Errorf("%w: %q (while resolving %q)", ErrWorkspaceNotFound, prefix, path)
		}
		if err != nil {
			return "", r.unread(path, fmt.Errorf("reading workspace %q (while resolving %q): %w", prefix, path, err))
		}
		if ws.Spec.Cluster == "" {
			return "", r.unread(path, fmt.Errorf("workspace %q is not scheduled yet (phase %q)", prefix, ws.Status.Phase))
		}
		cluster = logicalcluster.Name(ws.Spec.Cluster)
		r.store(prefix, resolved{cluster: cluster, uid: string(ws.UID)})
		parent = cluster.Path()
	}
	return cluster, nil
}

// Forget drops path, and every path below it, from the cache; the next
// Resolve reads the workspaces again. Call it when a cached cluster turned
// out to be gone: its workspace was deleted, or deleted and recreated.
func (r *Resolver) Forget(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range r.cache {
		if p == path || strings.HasPrefix(p, path+":") {
			delete(r.cache, p)
		}
	}
}

// ForgetCluster drops every path that resolved to cluster.
func (r *Resolver) ForgetCluster(cluster logicalcluster.Name) {
	r.mu.Lock()
	var paths []string
	for p, e := range r.cache {
		if e.cluster == cluster {
			paths = append(paths, p)
		}
	}
	r.mu.Unlock()
	for _, p := range paths {
		r.Forget(p)
	}
}

// unread is the UnreadError of path for err, with the path's last known
// cluster.
func (r *Resolver) unread(path string, err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &UnreadError{Path: path, LastKnown: r.cache[path].cluster, Err: err}
}

func (r *Resolver) cached(path string) (resolved, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.cache[path]
	if !ok || r.now().After(e.expires) {
		return resolved{}, false
	}
	return e, true
}

func (r *Resolver) store(path string, e resolved) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.cache[path]; ok && old.uid != e.uid {
		// The workspace was recreated: whatever was cached below it is stale.
		for p := range r.cache {
			if strings.HasPrefix(p, path+":") {
				delete(r.cache, p)
			}
		}
	}
	e.expires = r.now().Add(r.ttl)
	r.cache[path] = e
}

// ClientGetter reads workspaces with a kcp clientset through the front-proxy.
type ClientGetter struct {
	Get func(ctx context.Context, parent logicalcluster.Path, name string, opts metav1.GetOptions) (*tenancyv1alpha1.Workspace, error)
}

// GetWorkspace implements WorkspaceGetter.
func (g ClientGetter) GetWorkspace(ctx context.Context, parent logicalcluster.Path, name string) (*tenancyv1alpha1.Workspace, error) {
	return g.Get(ctx, parent, name, metav1.GetOptions{})
}
