package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// fakeTree is a workspace hierarchy keyed by "parentCluster/name".
type fakeTree struct {
	ws map[string]*tenancyv1alpha1.Workspace
	// fail answers reads of "parentCluster/name" with an error.
	fail  map[string]error
	calls int
}

func (f *fakeTree) add(parent, name, cluster, uid string) {
	f.ws[parent+"/"+name] = &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Cluster: cluster},
	}
}

func (f *fakeTree) GetWorkspace(_ context.Context, parent logicalcluster.Path, name string) (*tenancyv1alpha1.Workspace, error) {
	f.calls++
	if err := f.fail[parent.String()+"/"+name]; err != nil {
		return nil, err
	}
	if ws, ok := f.ws[parent.String()+"/"+name]; ok {
		return ws, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name)
}

func newTree() *fakeTree {
	f := &fakeTree{ws: map[string]*tenancyv1alpha1.Workspace{}, fail: map[string]error{}}
	f.add("root", "network", "c-network", "u1")
	f.add("root", "org", "c-org", "u2")
	f.add("c-org", "team", "c-team", "u3")
	f.add("c-team", "network", "c-deep", "u4")
	return f
}

func TestResolve(t *testing.T) {
	tests := []struct {
		path    string
		want    logicalcluster.Name
		wantErr string
	}{
		{path: "root:network", want: "c-network"},
		{path: "root:org", want: "c-org"},
		{path: "root:org:team:network", want: "c-deep"},
		{path: "c-already-a-cluster", want: "c-already-a-cluster"},
		{path: "root:missing", wantErr: `workspace not found: "root:missing" (while resolving "root:missing")`},
		{path: "root:org:nope:network", wantErr: `workspace not found: "root:org:nope" (while resolving "root:org:nope:network")`},
		{path: "", wantErr: "empty workspace path"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := NewResolver(newTree(), time.Minute)
			got, err := r.Resolve(context.Background(), tt.path)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Resolve(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
}

func TestResolveNotFoundIsDetectable(t *testing.T) {
	_, err := NewResolver(newTree(), time.Minute).Resolve(context.Background(), "root:gone")
	if !errors.Is(err, ErrWorkspaceNotFound) {
		t.Fatalf("want ErrWorkspaceNotFound, got %v", err)
	}
}

func TestResolveCachesAndForgets(t *testing.T) {
	tree := newTree()
	r := NewResolver(tree, time.Minute)
	ctx := context.Background()
	if _, err := r.Resolve(ctx, "root:org:team:network"); err != nil {
		t.Fatal(err)
	}
	calls := tree.calls
	if _, err := r.Resolve(ctx, "root:org:team:network"); err != nil || tree.calls != calls {
		t.Fatalf("second resolve should be cached: calls %d -> %d, err %v", calls, tree.calls, err)
	}
	// A sibling below a cached parent only reads the last segment.
	tree.add("c-team", "compute", "c-compute", "u5")
	if got, err := r.Resolve(ctx, "root:org:team:compute"); err != nil || got != "c-compute" || tree.calls != calls+1 {
		t.Fatalf("sibling: got %q, %v, calls %d (want %d)", got, err, tree.calls, calls+1)
	}

	// The workspace is deleted and recreated under the same path.
	tree.add("c-team", "network", "c-deep-2", "u6")
	r.ForgetCluster("c-deep")
	if got, err := r.Resolve(ctx, "root:org:team:network"); err != nil || got != "c-deep-2" {
		t.Fatalf("after ForgetCluster: got %q, %v", got, err)
	}
}

func TestResolveExpires(t *testing.T) {
	tree := newTree()
	r := NewResolver(tree, time.Second)
	now := time.Now()
	r.now = func() time.Time { return now }
	ctx := context.Background()
	if _, err := r.Resolve(ctx, "root:network"); err != nil {
		t.Fatal(err)
	}
	tree.add("root", "network", "c-network-2", "u9")
	now = now.Add(2 * time.Second)
	if got, _ := r.Resolve(ctx, "root:network"); got != "c-network-2" {
		t.Fatalf("expired entry not re-read: got %q", got)
	}
}

// TestResolveUnread: a path that cannot be read is an UnreadError, never
// ErrWorkspaceNotFound, and carries the cluster the path last resolved to, however
// long ago, until a read finds the path gone.
func TestResolveUnread(t *testing.T) {
	workspaces := schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}
	forbidden := apierrors.NewForbidden(workspaces, "team", errors.New("no grant"))
	forbidTeam := func(f *fakeTree) { f.fail["c-org/team"] = forbidden }
	tests := []struct {
		name string
		// resolved are resolved first; then the cache's lifetime passes
		// and each change is made, with a Resolve of path after each.
		resolved  []string
		changes   []func(*fakeTree)
		path      string
		wantKnown logicalcluster.Name
		wantMsg   string
	}{{
		name:    "never resolved",
		changes: []func(*fakeTree){forbidTeam},
		path:    "root:org:team:network",
		wantMsg: `reading workspace "root:org:team" (while resolving "root:org:team:network"): workspaces.tenancy.kcp.io "team" is forbidden: no grant`,
	}, {
		name:      "the grant on an intermediate workspace removed",
		resolved:  []string{"root:org:team:network"},
		changes:   []func(*fakeTree){forbidTeam},
		path:      "root:org:team:network",
		wantKnown: "c-deep",
		wantMsg:   `reading workspace "root:org:team" (while resolving "root:org:team:network"): workspaces.tenancy.kcp.io "team" is forbidden: no grant`,
	}, {
		name:      "the last segment unreadable",
		resolved:  []string{"root:org:team:network"},
		changes:   []func(*fakeTree){func(f *fakeTree) { f.fail["c-team/network"] = apierrors.NewServiceUnavailable("shard down") }},
		path:      "root:org:team:network",
		wantKnown: "c-deep",
		wantMsg:   `reading workspace "root:org:team:network" (while resolving "root:org:team:network"): shard down`,
	}, {
		name:     "recreated and not scheduled yet",
		resolved: []string{"root:network"},
		changes: []func(*fakeTree){func(f *fakeTree) {
			f.ws["root/network"] = &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "network", UID: "u7"},
				Status: tenancyv1alpha1.WorkspaceStatus{Phase: "Scheduling"}}
		}},
		path:      "root:network",
		wantKnown: "c-network",
		wantMsg:   `workspace "root:network" is not scheduled yet (phase "Scheduling")`,
	}, {
		name:     "found gone, then unreadable",
		resolved: []string{"root:org:team:network"},
		changes:  []func(*fakeTree){func(f *fakeTree) { delete(f.ws, "c-org/team") }, forbidTeam},
		path:     "root:org:team:network",
		wantMsg:  `reading workspace "root:org:team" (while resolving "root:org:team:network"): workspaces.tenancy.kcp.io "team" is forbidden: no grant`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := newTree()
			r := NewResolver(tree, time.Second)
			now := time.Now()
			r.now = func() time.Time { return now }
			ctx := context.Background()
			for _, p := range tt.resolved {
				if _, err := r.Resolve(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			now = now.Add(2 * time.Second)
			var err error
			for _, change := range tt.changes {
				change(tree)
				_, err = r.Resolve(ctx, tt.path)
			}
			var unread *UnreadError
			if !errors.As(err, &unread) || errors.Is(err, ErrWorkspaceNotFound) {
				t.Fatalf("want an UnreadError and not ErrWorkspaceNotFound, got %#v", err)
			}
			if unread.LastKnown != tt.wantKnown || unread.Path != tt.path {
				t.Errorf("last known %q for %q, want %q for %q", unread.LastKnown, unread.Path, tt.wantKnown, tt.path)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("message %q, want %q", err.Error(), tt.wantMsg)
			}
		})
	}
}
