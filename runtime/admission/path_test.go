package admission

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

// TestPath: a path is built only of segments that stay segments; a value
// that would climb out of its segment, or a cluster that is none, builds no
// path at all.
func TestPath(t *testing.T) {
	vpcs := schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}
	tests := []struct {
		name                    string
		cluster, namespace, obj string
		resource                schema.GroupVersionResource
		want, wantErr           string
	}{
		{name: "namespaced object", cluster: "c1", namespace: "prod", obj: "core", resource: vpcs,
			want: "/clusters/c1/apis/network.test.io/v1/namespaces/prod/vpcs/core"},
		{name: "cluster-wide collection", cluster: "c1", resource: vpcs, want: "/clusters/c1/apis/network.test.io/v1/vpcs"},
		{name: "core group", cluster: "c1", namespace: "ns", resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			want: "/clusters/c1/api/v1/namespaces/ns/configmaps"},
		{name: "a name that climbs into another workspace", cluster: "c1", namespace: "prod", resource: vpcs,
			obj: "../../../../../../../../clusters/c2/apis/network.test.io/v1/namespaces/prod/vpcs/core", wantErr: "cannot be a path segment"},
		{name: "a namespace that climbs", cluster: "c1", namespace: "..", obj: "core", resource: vpcs, wantErr: "cannot be a path segment"},
		{name: "an escaped slash", cluster: "c1", namespace: "prod", obj: "a%2F..%2F..", resource: vpcs, wantErr: "cannot be a path segment"},
		{name: "a resource from an annotation that climbs", cluster: "c1", obj: "core",
			resource: schema.GroupVersionResource{Group: "..", Version: "..", Resource: "vpcs"}, wantErr: "cannot be a path segment"},
		{name: "a cluster that is a path", cluster: "c1/../c2", resource: vpcs, wantErr: "not a logical cluster name"},
		{name: "no cluster", cluster: "", resource: vpcs, wantErr: "not a logical cluster name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Path(tt.cluster, tt.resource, tt.namespace, tt.obj)
			if check.WantError(t, err, tt.wantErr) {
				return
			}
			if got.String() != tt.want {
				t.Fatalf("Path = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestWorkspacePath: a workspace path a rule names addresses that
// workspace; the wildcard, a path that climbs or leaves its segment, and
// no path address nothing.
func TestWorkspacePath(t *testing.T) {
	lcs := schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "logicalclusters"}
	tests := []struct {
		name, workspace string
		want, wantErr   string
	}{
		{name: "a nested path", workspace: "root:org:network", want: "/clusters/root:org:network/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"},
		{name: "a logical cluster name", workspace: "2x9k3l", want: "/clusters/2x9k3l/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"},
		{name: "the wildcard", workspace: "*", wantErr: "not a workspace path"},
		{name: "a path that climbs", workspace: "root/../c2", wantErr: "not a workspace path"},
		{name: "an empty segment", workspace: "root::network", wantErr: "not a workspace path"},
		{name: "no path", workspace: "", wantErr: "not a workspace path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WorkspacePath(tt.workspace, lcs, "", "cluster")
			if check.WantError(t, err, tt.wantErr) {
				return
			}
			if got.String() != tt.want {
				t.Fatalf("WorkspacePath = %s, want %s", got, tt.want)
			}
		})
	}
}
