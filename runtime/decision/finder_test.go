package decision

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

// listServer serves LISTs of dependents in pages, as an API server does,
// and records the requests it got.
type listServer struct {
	mu       sync.Mutex
	requests []string
	// items by request path; a path that is missing answers 404.
	items  map[string][]map[string]interface{}
	status int // when set, every request fails with it
	body   string
	// revision, when set, gives the resourceVersion of a list by query.
	revision func(q url.Values) string
}

var vpcs = schema.GroupResource{Group: "network.test.io", Resource: "vpcs"}

func (s *listServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.URL.Path+"?"+r.URL.RawQuery)
	s.mu.Unlock()
	if s.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.status)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"boom","reason":"InternalError","code":%d}`, s.status)
		return
	}
	if s.body != "" {
		_, _ = w.Write([]byte(s.body))
		return
	}
	items, ok := s.items[r.URL.Path]
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}`))
		return
	}
	if sel := r.URL.Query().Get("labelSelector"); sel != "" {
		selector, err := labels.Parse(sel)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var matched []map[string]interface{}
		for _, it := range items {
			u := unstructured.Unstructured{Object: it}
			if selector.Matches(labels.Set(u.GetLabels())) {
				matched = append(matched, it)
			}
		}
		items = matched
	}
	rv := "42"
	if s.revision != nil {
		rv = s.revision(r.URL.Query())
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	end := len(items)
	if limit > 0 {
		end = min(start+limit, len(items))
	}
	cont := ""
	if end < len(items) {
		cont = strconv.Itoa(end)
	}
	page := map[string]interface{}{
		"apiVersion": "compute.test.io/v1", "kind": "VirtualMachineList",
		"metadata": map[string]interface{}{"resourceVersion": rv, "continue": cont},
		"items":    items[start:end],
	}
	_ = json.NewEncoder(w).Encode(page)
}

// serveFinder is a FrontProxyFinder with its defaults that reaches the
// front-proxy at h, served until the test ends.
func serveFinder(t *testing.T, h http.Handler) *FrontProxyFinder {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f, err := NewFrontProxyFinder(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func vm(namespace, name, vpc string, deleting bool) map[string]interface{} {
	meta := map[string]interface{}{"name": name, "namespace": namespace,
		"managedFields": []interface{}{map[string]interface{}{"manager": "test", "fieldsV1": map[string]interface{}{"f:spec": map[string]interface{}{}}}}}
	if deleting {
		meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	}
	return map[string]interface{}{"metadata": meta, "spec": map[string]interface{}{"vpcRef": map[string]interface{}{"name": vpc}, "cpu": 2}}
}

func TestFrontProxyFinder(t *testing.T) {
	vms := schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"}
	protection := registry.Protection{Rule: "c/r", Dependent: vms, DependentKind: "VirtualMachine", Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}}
	namespaced := "/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines"
	clusterWide := "/clusters/c1/apis/compute.test.io/v1/virtualmachines"
	many := func(n int, vpc func(i int) string) []map[string]interface{} {
		var out []map[string]interface{}
		for i := 0; i < n; i++ {
			out = append(out, vm("apps", fmt.Sprintf("vm-%02d", i), vpc(i), false))
		}
		return out
	}
	tests := []struct {
		name      string
		server    *listServer
		namespace string
		limit     int
		want      []Blocker
		wantMore  int
		wantErr   string
		wantReqs  int
	}{
		{
			name: "blockers on several pages, deleting dependents ignored",
			server: &listServer{items: map[string][]map[string]interface{}{namespaced: append(many(7, func(i int) string {
				if i%3 == 0 {
					return "vpc-a"
				}
				return "vpc-b"
			}), vm("apps", "vm-gone", "vpc-a", true))}},
			namespace: "apps", limit: 10,
			want:     []Blocker{{Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-00"}, {Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-03"}, {Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-06"}},
			wantReqs: 3,
		},
		{
			name:      "stops reading once it has more than limit",
			server:    &listServer{items: map[string][]map[string]interface{}{namespaced: many(9, func(int) string { return "vpc-a" })}},
			namespace: "apps", limit: 2,
			want:     []Blocker{{Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-00"}, {Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-01"}},
			wantMore: -1, wantReqs: 1,
		},
		{
			name:      "nothing references it",
			server:    &listServer{items: map[string][]map[string]interface{}{namespaced: many(4, func(int) string { return "vpc-b" })}},
			namespace: "apps", limit: 10, wantReqs: 2,
		},
		{
			name:      "a cluster-scoped dependent type is found after a 404",
			server:    &listServer{items: map[string][]map[string]interface{}{clusterWide: {vm("", "vm-x", "vpc-a", false)}}},
			namespace: "apps", limit: 10,
			want:     []Blocker{{Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "", Name: "vm-x"}},
			wantReqs: 2,
		},
		{
			name:      "a consumer that has not bound the dependent type has no dependents",
			server:    &listServer{items: map[string][]map[string]interface{}{}},
			namespace: "apps", limit: 10, wantReqs: 2,
		},
		{
			name:      "server errors fail the lookup",
			server:    &listServer{status: http.StatusInternalServerError},
			namespace: "apps", limit: 10, wantErr: "boom",
		},
		{
			name:      "a malformed page fails the lookup",
			server:    &listServer{body: `{"items":[{"metadata":{"name":"vm-1"},"spec":{"vpcRef":{"name":"vpc-a"}}},`},
			namespace: "apps", limit: 10, wantErr: "decoding the list of virtualmachines.compute.test.io",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := serveFinder(t, tt.server)
			f.PageSize = 3
			got, more, err := f.FindBlockers(context.Background(), "c1", tt.namespace, vpcs, "vpc-a", protection, tt.limit)
			if check.WantError(t, err, tt.wantErr) {
				return
			}
			if !reflect.DeepEqual(got, tt.want) || more != tt.wantMore {
				t.Fatalf("blockers = %v, more %d; want %v, more %d", got, more, tt.want, tt.wantMore)
			}
			if len(tt.server.requests) != tt.wantReqs {
				t.Fatalf("made %d requests, want %d: %v", len(tt.server.requests), tt.wantReqs, tt.server.requests)
			}
			for _, r := range tt.server.requests {
				if !strings.Contains(r, "limit=3") {
					t.Errorf("request %s does not ask for pages of 3", r)
				}
			}
		})
	}
}

func TestFrontProxyFinderPageSize(t *testing.T) {
	path := "/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines"
	var items []map[string]interface{}
	for i := 0; i < 50; i++ {
		items = append(items, vm("apps", fmt.Sprintf("vm-%02d", i), "vpc-b", false))
	}
	items = append(items, vm("apps", "vm-last", "vpc-a", false))
	p := registry.Protection{Dependent: schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"},
		DependentKind: "VirtualMachine", Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}}
	tests := []struct {
		name      string
		pageSize  *int64
		wantQuery []string
	}{
		{name: "the default bounds a page", wantQuery: []string{fmt.Sprintf("limit=%d", DefaultPageSize)}},
		{name: "0 reads everything in one response", pageSize: new(int64(0)), wantQuery: []string{""}},
		{name: "small pages", pageSize: new(int64(20)), wantQuery: []string{"limit=20", "continue=20&limit=20", "continue=40&limit=20"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := &listServer{items: map[string][]map[string]interface{}{path: items}}
			f := serveFinder(t, server)
			if tt.pageSize != nil {
				f.PageSize = *tt.pageSize
			}
			got, _, err := f.FindBlockers(context.Background(), "c1", "apps", vpcs, "vpc-a", p, 10)
			if err != nil {
				t.Fatal(err)
			}
			if want := []Blocker{{Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-last"}}; !reflect.DeepEqual(got, want) {
				t.Fatalf("blockers = %v, want %v", got, want)
			}
			var queries []string
			for _, r := range server.requests {
				queries = append(queries, r[strings.Index(r, "?")+1:])
			}
			if !reflect.DeepEqual(queries, tt.wantQuery) {
				t.Fatalf("queries = %q, want %q", queries, tt.wantQuery)
			}
		})
	}
}

// schemaSource serves one reference index schema for every dependent type.
type schemaSource registry.Schema

// reindexQueue records the dependents a lookup gives the Reindexer.
type reindexQueue map[reindexItem]bool

type reindexItem struct {
	cluster   string
	resource  schema.GroupVersionResource
	namespace string
	name      string
}

func (q reindexQueue) Enqueue(cluster string, resource schema.GroupVersionResource, objs []index.ObjectKey) {
	for _, o := range objs {
		q[reindexItem{cluster: cluster, resource: resource, namespace: o.Namespace, name: o.Name}] = true
	}
}

func (s schemaSource) IndexSchema(schema.GroupResource) registry.Schema { return registry.Schema(s) }

func TestFrontProxyFinderIndexed(t *testing.T) {
	path := "/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines"
	vmPath := fieldpath.MustParse(".spec.vpcRef.name")
	p := registry.Protection{Dependent: schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"},
		DependentKind: "VirtualMachine", Paths: []fieldpath.Path{vmPath}}
	index := registry.Schema{Stamp: "s1", References: []registry.Reference{{Target: vpcs, Paths: []fieldpath.Path{vmPath}}}}
	labelled := func(name, vpc string, labels map[string]string) map[string]interface{} {
		o := vm("apps", name, vpc, false)
		l := map[string]interface{}{"team": "a"}
		for k, v := range labels {
			l[k] = v
		}
		o["metadata"].(map[string]interface{})["labels"] = l
		return o
	}
	stamped := func(name, vpc string) map[string]interface{} {
		return labelled(name, vpc, map[string]string{registry.StampLabel: "s1", registry.RefLabel(vpcs, vpc): ""})
	}
	items := []map[string]interface{}{
		stamped("vm-00", "vpc-a"),
		stamped("vm-01", "vpc-b"),
		labelled("vm-02", "vpc-a", nil), // written before the index existed
		labelled("vm-03", "vpc-a", map[string]string{registry.StampLabel: "s0", registry.RefLabel(vpcs, "vpc-a"): ""}), // under other rules
		// A label that says vpc-a over a field that says vpc-b (a digest
		// collision, say) is checked against the field.
		labelled("vm-04", "vpc-b", map[string]string{registry.StampLabel: "s1", registry.RefLabel(vpcs, "vpc-a"): ""}),
		// Stamped without its reference label: the index is trusted, the
		// object is not read (the webhook never writes this).
		labelled("vm-05", "vpc-a", map[string]string{registry.StampLabel: "s1"}),
	}
	// Unindexed but being deleted: neither a blocker nor worth indexing.
	deleting := vm("apps", "vm-06", "vpc-a", true)
	items = append(items, deleting)
	for i := 0; i < 20; i++ {
		items = append(items, stamped(fmt.Sprintf("vm-x%02d", i), "vpc-b"))
	}
	want := []Blocker{{Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-02"}, {Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-03"}, {Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-00"}}

	tests := []struct {
		name     string
		revision func(q url.Values) string
		// wantQueries are the label selectors and revisions asked for, in
		// any order.
		wantQueries []string
	}{
		{
			name: "both reads at one revision",
			wantQueries: []string{
				"labelSelector=" + index.UnstampedSelector(),
				"labelSelector=" + index.ReferencingSelector(vpcs, "vpc-a"),
			},
		},
		{
			name: "a reference read older than the unstamped read is repeated at its revision",
			revision: func(q url.Values) string {
				if q.Get("labelSelector") == index.UnstampedSelector() || q.Get("resourceVersion") != "" {
					return "42"
				}
				return "41"
			},
			wantQueries: []string{
				"labelSelector=" + index.UnstampedSelector(),
				"labelSelector=" + index.ReferencingSelector(vpcs, "vpc-a"),
				"labelSelector=" + index.ReferencingSelector(vpcs, "vpc-a") + "&resourceVersion=42&resourceVersionMatch=Exact",
			},
		},
		{
			name: "an unstamped read older than the reference read is repeated at its revision",
			revision: func(q url.Values) string {
				if q.Get("labelSelector") == index.UnstampedSelector() && q.Get("resourceVersion") == "" {
					return "42"
				}
				return "43"
			},
			wantQueries: []string{
				"labelSelector=" + index.UnstampedSelector(),
				"labelSelector=" + index.ReferencingSelector(vpcs, "vpc-a"),
				"labelSelector=" + index.UnstampedSelector() + "&resourceVersion=43&resourceVersionMatch=Exact",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := &listServer{items: map[string][]map[string]interface{}{path: items}, revision: tt.revision}
			f := serveFinder(t, server)
			f.PageSize = 0
			f.Schemas = schemaSource(index)
			queued := reindexQueue{}
			f.Reindexer = queued
			got, more, err := f.FindBlockers(context.Background(), "c1", "apps", vpcs, "vpc-a", p, 10)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || more != 0 {
				t.Fatalf("blockers = %v, more %d; want %v", got, more, want)
			}
			wantQueued := reindexQueue{
				{cluster: "c1", resource: p.Dependent, namespace: "apps", name: "vm-02"}: true,
				{cluster: "c1", resource: p.Dependent, namespace: "apps", name: "vm-03"}: true,
			}
			if !reflect.DeepEqual(queued, wantQueued) {
				t.Fatalf("queued for re-indexing: %v, want the unstamped dependents that are not being deleted, %v", queued, wantQueued)
			}
			var queries []string
			for _, r := range server.requests {
				q, _ := url.ParseQuery(r[strings.Index(r, "?")+1:])
				queries = append(queries, "labelSelector="+q.Get("labelSelector")+revisionQuery(q))
			}
			sort.Strings(queries)
			sort.Strings(tt.wantQueries)
			if !reflect.DeepEqual(queries, tt.wantQueries) {
				t.Fatalf("queries = %q\nwant %q", queries, tt.wantQueries)
			}
		})
	}
}

func revisionQuery(q url.Values) string {
	if q.Get("resourceVersion") == "" {
		return ""
	}
	return "&resourceVersion=" + q.Get("resourceVersion") + "&resourceVersionMatch=" + q.Get("resourceVersionMatch")
}

func TestFrontProxyFinderUnindexable(t *testing.T) {
	// A type the index cannot describe is read in full, unfiltered.
	path := "/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines"
	p := registry.Protection{Dependent: schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"},
		DependentKind: "VirtualMachine", Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}}
	server := &listServer{items: map[string][]map[string]interface{}{path: {vm("apps", "vm-1", "vpc-a", false)}}}
	f := serveFinder(t, server)
	f.Schemas = schemaSource(registry.Schema{})
	queued := reindexQueue{}
	f.Reindexer = queued
	got, _, err := f.FindBlockers(context.Background(), "c1", "apps", vpcs, "vpc-a", p, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Blocker{{Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-1"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("blockers = %v, want %v", got, want)
	}
	if len(server.requests) != 1 || strings.Contains(server.requests[0], "labelSelector") {
		t.Fatalf("requests = %v, want one unfiltered list", server.requests)
	}
	// Writing it again would not index it: it must not be queued, or
	// every deletion would rewrite every such dependent.
	if len(queued) != 0 {
		t.Fatalf("queued for re-indexing: %v, want nothing for a type the index cannot describe", queued)
	}
}

func TestMergeBlockers(t *testing.T) {
	a, b, c := Blocker{Kind: "K", Namespace: "ns", Name: "a"}, Blocker{Kind: "K", Namespace: "ns", Name: "b"}, Blocker{Kind: "K", Namespace: "ns", Name: "c"}
	tests := []struct {
		name     string
		x, y     scanResult
		limit    int
		want     []Blocker
		wantMore int
	}{
		{name: "disjoint", x: scanResult{blockers: []Blocker{a}}, y: scanResult{blockers: []Blocker{b}}, limit: 10, want: []Blocker{a, b}},
		{name: "a dependent relabelled between the reads counts once", x: scanResult{blockers: []Blocker{a, b}}, y: scanResult{blockers: []Blocker{b}}, limit: 10, want: []Blocker{a, b}},
		{name: "over the limit", x: scanResult{blockers: []Blocker{a, b}}, y: scanResult{blockers: []Blocker{c}}, limit: 2, want: []Blocker{a, b}, wantMore: -1},
		{name: "one read stopped early", x: scanResult{blockers: []Blocker{a}, more: -1}, y: scanResult{}, limit: 1, want: []Blocker{a}, wantMore: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, more, _ := mergeBlockers(tt.x, tt.y, tt.limit)
			if !reflect.DeepEqual(got, tt.want) || more != tt.wantMore {
				t.Fatalf("got %v, more %d; want %v, more %d", got, more, tt.want, tt.wantMore)
			}
		})
	}
}

func TestOlderRevision(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"41", "42", true}, {"42", "42", false}, {"43", "42", false}, {"x", "42", true}, {"", "42", true}, {"abc", "abc", false},
	}
	for _, tt := range tests {
		if got := olderRevision(tt.a, tt.b); got != tt.want {
			t.Errorf("olderRevision(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestFrontProxyFinderTwoPaths: a protection whose rule names the
// protected type at two paths (merged into one protection) finds a
// dependent that names the object at either path, and names a dependent
// that names it at both once.
func TestFrontProxyFinderTwoPaths(t *testing.T) {
	vms := schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"}
	protection := registry.Protection{Rule: "c/r", Dependent: vms, DependentKind: "VirtualMachine",
		Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name"), fieldpath.MustParse(".spec.extraVPCs[*].name")}}
	withExtra := func(v map[string]interface{}, extra ...string) map[string]interface{} {
		var list []interface{}
		for _, e := range extra {
			list = append(list, map[string]interface{}{"name": e})
		}
		v["spec"].(map[string]interface{})["extraVPCs"] = list
		return v
	}
	namespaced := "/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines"
	f := serveFinder(t, &listServer{items: map[string][]map[string]interface{}{namespaced: {
		withExtra(vm("apps", "vm-both", "vpc-a", false), "vpc-a", "vpc-c"),
		withExtra(vm("apps", "vm-extra", "vpc-b", false), "vpc-a"),
		withExtra(vm("apps", "vm-neither", "vpc-b", false), "vpc-c"),
	}}})
	got, more, err := f.FindBlockers(context.Background(), "c1", "apps", vpcs, "vpc-a", protection, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []Blocker{{Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-both"}, {Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "apps", Name: "vm-extra"}}
	if !reflect.DeepEqual(got, want) || more != 0 {
		t.Fatalf("blockers = %v, more %d; want %v, once each", got, more, want)
	}
}

// TestFrontProxyReferencing reads one dependent with a GET: the token of
// its IntentLabel, and its fields checked against the rules' paths.
func TestFrontProxyReferencing(t *testing.T) {
	objects := map[string]string{
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-ref":    `{"metadata":{"name":"vm-ref","labels":{"` + v1alpha1.IntentLabel + `":"t41.1700000000"}},"spec":{"vpcRef":{"name":"vpc"}}}`,
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-other":  `{"metadata":{"name":"vm-other","labels":{"` + v1alpha1.IntentLabel + `":"not-a-label"}},"spec":{"vpcRef":{"name":"other"}}}`,
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-going":  `{"metadata":{"name":"vm-going","labels":{"` + v1alpha1.IntentLabel + `":"t43.1700000000"},"deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"vpcRef":{"name":"vpc"}}}`,
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-secret": "",
	}
	f := objectFinder(t, objects, func(r *http.Request, _ []byte) {
		if r.Method != http.MethodGet {
			t.Errorf("a dependent is only read, got %s %s", r.Method, r.URL.Path)
		}
	})
	p := registry.Protection{Dependent: vmGVR, DependentKind: "VirtualMachine", Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}}
	for _, tt := range []struct {
		name string
		want index.Dependent
		fail bool
	}{
		{name: "vm-ref", want: index.Dependent{Found: true, Token: "t41", References: true}},
		{name: "vm-other", want: index.Dependent{Found: true}},
		{name: "vm-going", want: index.Dependent{Found: true, Token: "t43"}},
		{name: "vm-absent"},
		{name: "vm-secret", fail: true},
	} {
		got, err := f.Referencing(context.Background(), "c1", p, "apps", tt.name, "vpc")
		if got != tt.want || (err != nil) != tt.fail {
			t.Errorf("%s: %+v, err=%v; want %+v (error %v)", tt.name, got, err, tt.want, tt.fail)
		}
	}
}
