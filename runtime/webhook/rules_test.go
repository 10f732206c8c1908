package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// fakeShards serves an APIExportEndpointSlice naming one virtual workspace
// per shard, and each shard's DependencyRules; a shard that is down answers
// 503.
type fakeShards struct {
	mu    sync.Mutex
	srv   *httptest.Server
	rules map[string][]map[string]interface{} // by shard
	down  map[string]bool
	// hung shards answer a list with nothing, until the client gives up,
	// as a stopped process does.
	hung  map[string]bool
	lists map[string]int
	// unhung ends the hung lists, when the test ends.
	unhung chan struct{}
	// stuck watches stay open and deliver nothing, as a watch that
	// missed an event would.
	stuck bool
}

func newFakeShards(t *testing.T, shards ...string) *fakeShards {
	f := &fakeShards{rules: map[string][]map[string]interface{}{}, down: map[string]bool{}, hung: map[string]bool{}, lists: map[string]int{}, unhung: make(chan struct{})}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.unhung) })
	for _, s := range shards {
		f.rules[s] = nil
	}
	return f
}

func (f *fakeShards) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if strings.HasPrefix(r.URL.Path, "/home/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/") {
		var endpoints []interface{}
		for s := range f.rules {
			endpoints = append(endpoints, map[string]interface{}{"url": f.srv.URL + "/" + s})
		}
		_ = json.NewEncoder(w).Encode(map[string]interface{}{
			"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice",
			"metadata": map[string]interface{}{"name": "x"}, "status": map[string]interface{}{"endpoints": endpoints},
		})
		return
	}
	shard, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if _, ok := f.rules[shard]; !ok || rest != "clusters/*/apis/"+v1alpha1.GroupVersion.String()+"/"+v1alpha1.Resource {
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("watch") == "true" {
		// An empty watch that ends after a while: a watching client lists
		// again, which is how it learns what the fake changed (the fake
		// sends no events). It lasts long enough not to count as a
		// failed watch, so the view is current while it is open. A stuck
		// one stays open, unless it is asked for the initial list as
		// events, which the fake does not serve.
		end := time.After(1500 * time.Millisecond)
		if f.stuck && r.URL.Query().Get("sendInitialEvents") != "true" {
			end = nil
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		f.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-end:
		}
		f.mu.Lock()
		return
	}
	f.lists[shard]++
	if f.hung[shard] {
		f.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-f.unhung:
		}
		f.mu.Lock()
		return
	}
	if f.down[shard] {
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable, Message: "shard " + shard + " is down"})
		return
	}
	items := f.rules[shard]
	if items == nil {
		items = []map[string]interface{}{}
	}
	// Pages as the API server serves them: limit items from the offset
	// the continue token names.
	listMeta := map[string]interface{}{}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	offset, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	items = items[min(offset, len(items)):]
	if limit > 0 && limit < len(items) {
		items, listMeta["continue"] = items[:limit], strconv.Itoa(offset+limit)
	}
	if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList") {
		// The metadata of each, as the API server serves it to a
		// metadata client.
		metas := make([]map[string]interface{}, 0, len(items))
		for _, item := range items {
			metas = append(metas, map[string]interface{}{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": item["metadata"]})
		}
		w.Header().Set("Content-Type", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
		_ = json.NewEncoder(w).Encode(map[string]interface{}{
			"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": listMeta, "items": metas,
		})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]interface{}{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "DependencyRuleList", "metadata": listMeta, "items": items,
	})
}

// virtualWorkspaces reaches the fake shards through the endpoint slice it
// serves.
func (f *fakeShards) virtualWorkspaces(t *testing.T) *process.VirtualWorkspaces {
	t.Helper()
	vw, err := process.NewVirtualWorkspaces(&rest.Config{Host: f.srv.URL + "/home", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "x")
	if err != nil {
		t.Fatal(err)
	}
	return vw
}

func (f *fakeShards) addRule(t *testing.T, shard, cluster, name string) {
	t.Helper()
	rule := &v1alpha1.DependencyRule{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DependencyRule"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1, UID: types.UID("uid-" + name),
			Annotations: map[string]string{"kcp.io/cluster": cluster}},
		Spec: v1alpha1.DependencyRuleSpec{
			Dependent: v1alpha1.Dependent{APIExportName: "compute.test.io", Group: "compute.test.io", Version: "v1", Kind: "VirtualMachine", Resource: "virtualmachines"},
			Dependencies: []v1alpha1.Dependency{{
				APIExportRef: v1alpha1.APIExportRef{Path: "root:network", Name: "network.test.io"},
				Group:        "network.test.io", Version: "v1", Resource: "vpcs",
				FieldRef: v1alpha1.FieldRef{Path: ".spec.vpcRef.name"},
			}},
		},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rule)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules[shard] = append(f.rules[shard], m)
}

func (f *fakeShards) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// TestRuleSyncShardDown: a shard that cannot be read keeps the registry
// incomplete and the webhook unready, naming the shard; the rules of the
// others are registered meanwhile, and a retry reads them all again, so a
// rule deleted in between is gone from the registry.
func TestRuleSyncShardDown(t *testing.T) {
	ctx := context.Background()
	f := newFakeShards(t, "shard-a", "shard-b")
	f.addRule(t, "shard-a", "cluster-a", "vm-needs-vpc")
	f.addRule(t, "shard-b", "cluster-b", "db-needs-vpc")
	f.set(func() { f.down["shard-b"] = true })
	vw := f.virtualWorkspaces(t)
	s := NewRuleSync(vw, registry.New(), logr.Discard())

	if _, err := s.populate(ctx); err == nil || !strings.Contains(err.Error(), "shard-b") {
		t.Fatalf("populate with a shard down: %v, want an error naming shard-b", err)
	}
	if err := s.Ready(); err == nil || !strings.Contains(err.Error(), "1 of 2 shards") || !strings.Contains(err.Error(), "/shard-b") {
		t.Errorf("Ready() = %v, want it to name the one shard of two not read", err)
	}
	if _, ok := s.Registry.Get(registry.Key("cluster-a", "vm-needs-vpc")); !ok || s.Registry.Len() != 1 {
		t.Errorf("the rules of the shard that answered are not registered: %v", s.Registry.Keys())
	}
	if s.populated {
		t.Error("the registry counts as complete without shard-b's rules")
	}

	// Meanwhile a rule on shard-a is deleted (and the watch has not told).
	f.set(func() { f.down["shard-b"] = false; f.rules["shard-a"] = nil })
	if _, err := s.populate(ctx); err != nil {
		t.Fatalf("populate after the shard came back: %v", err)
	}
	if _, ok := s.Registry.Get(registry.Key("cluster-b", "db-needs-vpc")); !ok || s.Registry.Len() != 1 || !s.populated {
		t.Errorf("registry %v, populated %v after every shard was read; want shard-b's rule only", s.Registry.Keys(), s.populated)
	}
	f.set(func() {
		if f.lists["shard-a"] != 2 {
			t.Errorf("shard-a listed %d times; every attempt reads every shard", f.lists["shard-a"])
		}
	})
}

// TestRuleSyncReadyNamesTheEndpointSlice: without the shards' URLs nothing
// can be read, and readiness says why.
func TestRuleSyncReadyNamesTheEndpointSlice(t *testing.T) {
	f := newFakeShards(t)
	vw, err := process.NewVirtualWorkspaces(&rest.Config{Host: f.srv.URL + "/nowhere", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "x")
	if err != nil {
		t.Fatal(err)
	}
	s := NewRuleSync(vw, registry.New(), logr.Discard())
	if _, err := s.populate(context.Background()); err == nil {
		t.Fatal("populate without an endpoint slice succeeded")
	}
	if err := s.Ready(); err == nil || !strings.Contains(err.Error(), "APIExportEndpointSlice") {
		t.Errorf("Ready() = %v, want it to say the endpoint slice could not be read", err)
	}
}

// TestRuleSyncDecidableWhileAShardIsDown: with one shard unread, a request
// whose URL names only clusters seen on the shards read is decided, one
// that names a cluster of the unread shard, or none, is refused naming the
// shard; the pod reports ready once PartialReadyAfter has passed, and every
// request is decidable once the shard is back.
func TestRuleSyncDecidableWhileAShardIsDown(t *testing.T) {
	ctx := context.Background()
	f := newFakeShards(t, "shard-a", "shard-b")
	f.addRule(t, "shard-a", "cluster-a", "vm-needs-vpc")
	f.addRule(t, "shard-b", "cluster-b", "db-needs-vpc")
	vw := f.virtualWorkspaces(t)
	s := NewRuleSync(vw, registry.New(), logr.Discard())
	clock := time.Unix(1000, 0)
	s.now = func() time.Time { return clock }
	s.started = clock

	if err := s.Decidable(ctx, admission.Of("cluster-a"), admission.Recent); err == nil || err != admission.ErrNotInitialized {
		t.Errorf("before any read: Decidable = %v, want %v", err, admission.ErrNotInitialized)
	}
	f.set(func() { f.down["shard-b"] = true })
	if _, err := s.populate(ctx); err == nil {
		t.Fatal("populate with a shard down succeeded")
	}
	tests := []struct {
		name    string
		scope   admission.Scope
		refused string // "" when decidable
	}{
		{"rules on the shard read", admission.Of("cluster-a"), ""},
		{"rules on the shard down", admission.Of("cluster-b"), "cluster-b"},
		{"rules on both", admission.Of("cluster-a", "cluster-b"), "cluster-b"},
		{"a cluster no shard read holds", admission.Of("cluster-gone"), "/shard-b"},
		{"no clusters named", admission.Unnamed, "any workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Decidable(ctx, tt.scope, admission.Recent)
			switch {
			case tt.refused == "" && err != nil:
				t.Errorf("Decidable = %v, want nil", err)
			case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused) || !strings.Contains(err.Error(), "retry later")):
				t.Errorf("Decidable = %v, want a refusal naming %q", err, tt.refused)
			}
		})
	}

	if err := s.Ready(); err == nil {
		t.Error("Ready() with a shard down at once after start, want not ready")
	}
	clock = clock.Add(DefaultPartialReadyAfter)
	if err := s.Ready(); err != nil {
		t.Errorf("Ready() %s after start with one shard read: %v, want ready", DefaultPartialReadyAfter, err)
	}
	s.PartialReadyAfter = -1
	if err := s.Ready(); err == nil {
		t.Error("Ready() with PartialReadyAfter < 0 and a shard down, want not ready")
	}

	f.set(func() { f.down["shard-b"] = false })
	if _, err := s.populate(ctx); err != nil {
		t.Fatalf("populate after the shard came back: %v", err)
	}
	close(s.initialized)
	for _, sc := range []admission.Scope{admission.Of("cluster-b"), admission.Of("cluster-gone"), admission.Unnamed} {
		if err := s.Decidable(ctx, sc, admission.Recent); err != nil {
			t.Errorf("every shard read: Decidable(%v) = %v, want nil", sc, err)
		}
	}
}

// TestRuleSyncReadyBeforeAnyBinding: until some workspace binds the dep-ctrl
// export, its endpoint slice names no virtual workspace and there are no
// rules: the webhook is ready at once, and decides (nothing is protected),
// so the runtime may be installed before any provider binds the export.
func TestRuleSyncReadyBeforeAnyBinding(t *testing.T) {
	f := newFakeShards(t)
	vw := f.virtualWorkspaces(t)
	s := NewRuleSync(vw, registry.New(), logr.Discard())
	s.PartialReadyAfter = -1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Start(ctx) }()
	select {
	case <-s.Initialized():
	case <-time.After(10 * time.Second):
		t.Fatalf("not initialized without any binding: %v", s.Ready())
	}
	if err := s.Ready(); err != nil {
		t.Errorf("Ready() = %v, want ready", err)
	}
	if err := s.Decidable(ctx, admission.Unnamed, admission.Recent); err != nil {
		t.Errorf("Decidable = %v, want nil", err)
	}
}
