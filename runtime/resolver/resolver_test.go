package resolver

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
	ws    map[string]*tenancyv1alpha1.Workspace
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
	if ws, ok := f.ws[parent.String()+"/"+name]; ok {
		return ws, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name)
}

func newTree() *fakeTree {
	f := &fakeTree{ws: map[string]*tenancyv1alpha1.Workspace{}}
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
			r := New(newTree(), time.Minute)
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
	_, err := New(newTree(), time.Minute).Resolve(context.Background(), "root:gone")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}

func TestResolveCachesAndForgets(t *testing.T) {
	tree := newTree()
	r := New(tree, time.Minute)
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
	r := New(tree, time.Second)
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
