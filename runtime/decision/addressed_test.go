package decision

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

// TestWorkspaceReadsAndEvents: the workspace's own state (Terminating), the
// deleted object's (deletionState) and the skip-protection Event
// (createEvent) are read and written at the front-proxy address of the
// request's logical cluster, and a cluster or a name that is no path
// segment sends nothing at all.
func TestWorkspaceReadsAndEvents(t *testing.T) {
	const escape = "../../../../clusters/c2/apis/network.test.io/v1/namespaces/prod/vpcs/vpc-1"
	type call func(ctx context.Context, f *FrontProxyFinder) (string, error)
	terminating := func(cluster string) call {
		return func(ctx context.Context, f *FrontProxyFinder) (string, error) {
			yes, err := f.Terminating(ctx, cluster)
			return strconv.FormatBool(yes), err
		}
	}
	state := func(gvr schema.GroupVersionResource, namespace, name string) call {
		return func(ctx context.Context, f *FrontProxyFinder) (string, error) {
			st, err := f.deletionState(ctx, "c1", gvr, metav1.ObjectMeta{Namespace: namespace, Name: name, UID: "uid-1"})
			return map[deletionState]string{stillThere: "still there", deletionShown: "deletion shown"}[st], err
		}
	}
	event := func(cluster string) call {
		return func(ctx context.Context, f *FrontProxyFinder) (string, error) {
			d := admission.Deletion{Namespace: "prod", Name: "vpc-1", Resource: vpcGVR, Meta: metav1.ObjectMeta{Namespace: "prod", Name: "vpc-1", UID: "uid-1"}}
			ev := skipEvent(d, "test", time.Now())
			return "", f.createEvent(ctx, cluster, ev)
		}
	}
	tests := []struct {
		name    string
		do      call
		want    string
		wantErr string
		sent    []string
	}{
		{name: "a workspace that is ready", do: terminating("c1"),
			want: "false", sent: []string{"GET /clusters/c1/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"}},
		{name: "a workspace whose phase is Terminating", do: terminating("c-term"),
			want: "true", sent: []string{"GET /clusters/c-term/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"}},
		{name: "a workspace being deleted", do: terminating("c-del"),
			want: "true", sent: []string{"GET /clusters/c-del/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"}},
		{name: "a workspace that is a path", do: terminating("c1/../c2"), wantErr: "not a logical cluster name"},
		{name: "the deleted object, still there", do: state(vpcGVR, "prod", "vpc-1"),
			want: "still there", sent: []string{"GET /clusters/c1/apis/network.test.io/v1/namespaces/prod/vpcs/vpc-1"}},
		{name: "the deleted object, replaced by another of its name", do: state(vpcGVR, "prod", "vpc-new"),
			want: "deletion shown", sent: []string{"GET /clusters/c1/apis/network.test.io/v1/namespaces/prod/vpcs/vpc-new"}},
		{name: "the deleted object, gone", do: state(vpcGVR, "prod", "vpc-gone"),
			want: "deletion shown", sent: []string{"GET /clusters/c1/apis/network.test.io/v1/namespaces/prod/vpcs/vpc-gone"}},
		{name: "a cluster-scoped object", do: state(regionGVR, "", "region-1"),
			want: "still there", sent: []string{"GET /clusters/c1/apis/compute.test.io/v1/regions/region-1"}},
		{name: "an object whose name is a path", do: state(vpcGVR, "prod", escape), wantErr: "cannot be a path segment"},
		{name: "an object without a name is not read as its collection", do: state(vpcGVR, "prod", ""), wantErr: "has no name"},
		{name: "the Event, in the object's namespace", do: event("c1"),
			sent: []string{"POST /clusters/c1/apis/events.k8s.io/v1/namespaces/prod/events"}},
		{name: "the Event, for a workspace that is a path", do: event("system:../../clusters/c2"), wantErr: "not a logical cluster name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := &fakeFrontProxy{
				clusterScoped: map[string]bool{"c1|regions": true},
				logicalClusters: map[string]map[string]interface{}{
					"c-term": {"metadata": map[string]interface{}{"name": "cluster"}, "status": map[string]interface{}{"phase": "Terminating"}},
					"c-del":  {"metadata": map[string]interface{}{"name": "cluster", "deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": map[string]interface{}{"phase": "Ready"}},
				},
			}
			for _, c := range []string{"c1", "c2"} {
				fp.add(c, vpcGVR, "prod", "vpc-1", map[string]interface{}{"metadata": map[string]interface{}{"uid": "uid-1"}})
				fp.add(c, vpcGVR, "prod", "vpc-new", map[string]interface{}{"metadata": map[string]interface{}{"uid": "uid-2"}})
			}
			fp.add("c1", regionGVR, "", "region-1", map[string]interface{}{"metadata": map[string]interface{}{"uid": "uid-1"}})
			got, err := tt.do(context.Background(), serveFinder(t, fp))
			if check.WantError(t, err, tt.wantErr) {
				if sent := fp.sent(); len(sent) > 0 {
					t.Fatalf("sent %q for a request that addresses nothing", sent)
				}
				return
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if sent := fp.sent(); !slices.Equal(sent, tt.sent) {
				t.Errorf("sent %q, want %q", sent, tt.sent)
			}
		})
	}
}
