package decision

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// workspaceTree serves the child Workspaces of each logical cluster, two a
// page, as the front-proxy lists them; forbidden clusters answer 403.
type workspaceTree struct {
	children  map[string][]string
	forbidden map[string]bool
	mu        sync.Mutex
	pages     int
}

func (w *workspaceTree) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) != 6 || parts[0] != "clusters" || parts[2] != "apis" || parts[3] != "tenancy.kcp.io" || parts[5] != "workspaces" {
		http.NotFound(rw, r)
		return
	}
	cluster := parts[1]
	w.mu.Lock()
	w.pages++
	w.mu.Unlock()
	if w.forbidden[cluster] {
		writeStatus(rw, http.StatusForbidden, "Forbidden", "workspaces is forbidden")
		return
	}
	kids := w.children[cluster]
	start := 0
	if c := r.URL.Query().Get("continue"); c != "" {
		_ = json.Unmarshal([]byte(c), &start)
	}
	end := min(start+2, len(kids))
	cont := ""
	if end < len(kids) {
		b, _ := json.Marshal(end)
		cont = string(b)
	}
	var items []interface{}
	for _, k := range kids[start:end] {
		items = append(items, map[string]interface{}{"spec": map[string]interface{}{"cluster": k}})
	}
	writeJSON(rw, map[string]interface{}{"metadata": map[string]interface{}{"continue": cont}, "items": items})
}

// TestWorkspaceWalk: the walk visits root and every logical cluster below
// it once, across pages, leaves out what is no logical cluster name, goes
// on past a workspace whose children it may not list and says so, and
// never visits a cluster twice when the tree names one twice.
func TestWorkspaceWalk(t *testing.T) {
	tree := &workspaceTree{
		children: map[string][]string{
			"root": {"org", "team-a", "team-b", "not a cluster", ""},
			"org":  {"p1", "p2", "c1"},
			"p1":   {"org"},
		},
		forbidden: map[string]bool{"team-b": true},
	}
	walk := &WorkspaceWalk{Finder: serveFinder(t, tree), Root: "root", Limit: rate.NewLimiter(rate.Inf, 1)}
	var visited []string
	err := walk.Walk(context.Background(), func(c string) { visited = append(visited, c) })
	if err == nil || !strings.Contains(err.Error(), "1 workspaces could not be walked") || !strings.Contains(err.Error(), "team-b") {
		t.Errorf("err = %v, want the forbidden workspace named", err)
	}
	sort.Strings(visited)
	if want := []string{"c1", "org", "p1", "p2", "root", "team-a", "team-b"}; !slices.Equal(visited, want) {
		t.Errorf("visited %v, want %v", visited, want)
	}
	// root's five children take three pages, org's three two; the other
	// five clusters one each.
	if tree.pages != 10 {
		t.Errorf("read %d pages, want 10", tree.pages)
	}
}

// exportServer serves the LogicalCluster of the workspace path root:network
// (logical cluster "netlc"; root:gone has none) and, in each cluster of
// bound, an APIBinding of the export network.test.io there, which has
// bound vpcs unless the cluster is in failed; it counts the path
// resolutions.
type exportServer struct {
	bound, failed map[string]bool
	// resources are what a binding binds; vpcs when empty.
	resources []string
	mu        sync.Mutex
	resolved  int
	// lists counts the reads of APIBindings.
	lists int
}

func (s *exportServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/clusters/root:network/apis/core.kcp.io/v1alpha1/logicalclusters/cluster":
		s.mu.Lock()
		s.resolved++
		s.mu.Unlock()
		writeJSON(w, map[string]interface{}{"metadata": map[string]interface{}{"name": "cluster", "annotations": map[string]interface{}{"kcp.io/cluster": "netlc"}}})
	case strings.HasSuffix(r.URL.Path, "/apis/apis.kcp.io/v1alpha2/apibindings"):
		s.mu.Lock()
		s.lists++
		s.mu.Unlock()
		cluster := strings.Split(r.URL.Path, "/")[2]
		want := exportLabel(registry.Export{Cluster: "netlc", Name: "network.test.io"})
		var items []interface{}
		if s.bound[cluster] && strings.Contains(r.URL.Query().Get("labelSelector"), want) {
			var bound []interface{}
			resources := s.resources
			if len(resources) == 0 {
				resources = []string{"vpcs"}
			}
			for _, res := range resources {
				if !s.failed[cluster] {
					bound = append(bound, map[string]interface{}{"group": "network.test.io", "resource": res})
				}
			}
			items = append(items, map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]interface{}{"internal.apis.kcp.io/export": want}},
				"status": map[string]interface{}{"boundResources": bound}})
		}
		writeJSON(w, map[string]interface{}{"items": items})
	default:
		http.NotFound(w, r)
	}
}

// TestWorkspaceWalkServes: a workspace holds protected objects of a type
// only where it binds an export a rule names as serving the type, its
// workspace path resolved to a logical cluster (once, then remembered),
// and the binding did bind the type (one that failed to, the workspace
// serving the type already, does not count); an export whose path does
// not resolve is left out; a type no rule names is served nowhere.
func TestWorkspaceWalkServes(t *testing.T) {
	vpcs := schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}
	srv := &exportServer{bound: map[string]bool{"c1": true, "c3": true}, failed: map[string]bool{"c3": true}}
	walk := &WorkspaceWalk{Finder: serveFinder(t, srv), Root: "root", Exports: func(gr schema.GroupResource) []v1alpha1.APIExportRef {
		if gr == vpcs.GroupResource() {
			return []v1alpha1.APIExportRef{{Path: "root:gone", Name: "network.test.io"}, {Path: "root:network", Name: "network.test.io"}}
		}
		return nil
	}}
	for _, tc := range []struct {
		cluster string
		target  schema.GroupVersionResource
		want    bool
	}{
		{cluster: "c1", target: vpcs, want: true},
		{cluster: "c2", target: vpcs, want: false},
		{cluster: "c3", target: vpcs, want: false},
		{cluster: "c1", target: schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "subnets"}, want: false},
	} {
		got, err := walk.Serves(context.Background(), tc.cluster, tc.target)
		if err != nil || got != tc.want {
			t.Errorf("Serves(%s, %s) = %v, %v; want %v", tc.cluster, tc.target.Resource, got, err, tc.want)
		}
	}
	gone := &WorkspaceWalk{Finder: walk.Finder, Root: "root", Exports: func(schema.GroupResource) []v1alpha1.APIExportRef {
		return []v1alpha1.APIExportRef{{Path: "root:gone", Name: "network.test.io"}}
	}}
	if got, err := gone.Serves(context.Background(), "c1", vpcs); got || err == nil {
		t.Errorf("with no export resolved: %v, %v; want an error", got, err)
	}
	if srv.resolved != 1 {
		// root:gone fails each time; root:network is read once.
		t.Errorf("root:network resolved %d times, want once", srv.resolved)
	}
}

// TestWorkspaceWalkServedAtOnce: whether a workspace serves each of
// several protected types is told with one read of its APIBindings; a type
// its binding does not bind, or no rule names, is not served.
func TestWorkspaceWalkServedAtOnce(t *testing.T) {
	gvr := func(resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: resource}
	}
	vpcs, subnets, fws, regions := gvr("vpcs"), gvr("subnets"), gvr("firewallrules"), gvr("regions")
	srv := &exportServer{bound: map[string]bool{"c1": true}, resources: []string{"vpcs", "subnets"}}
	walk := &WorkspaceWalk{Finder: serveFinder(t, srv), Root: "root", Exports: func(gr schema.GroupResource) []v1alpha1.APIExportRef {
		if gr == regions.GroupResource() {
			return nil
		}
		return []v1alpha1.APIExportRef{{Path: "root:network", Name: "network.test.io"}}
	}}
	served, err := walk.Served(context.Background(), "c1", []schema.GroupVersionResource{vpcs, subnets, fws, regions})
	if err != nil {
		t.Fatal(err)
	}
	want := map[schema.GroupVersionResource]bool{vpcs: true, subnets: true}
	if !maps.Equal(served, want) {
		t.Errorf("served %v, want %v", served, want)
	}
	if srv.lists != 1 {
		t.Errorf("%d reads of the APIBindings, want one for every type", srv.lists)
	}
}
