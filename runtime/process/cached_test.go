package process

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

// TestCachedStaleWhileTheShardIsUnreachable: once a shard cannot be
// reached (its connections reset, new ones refused), the view of its
// rules holds them as they were, and a rule created meanwhile is missing
// from it; so ListShard fails, as it does before the initial list, rather
// than hand out that view as if it were current. Once the shard answers
// again, ListShard returns what the shard holds. (The controller published
// the stamp of the rules as they were before a partition again, after the
// webhook had withdrawn it for a rule created meanwhile:
// TestControllerPartitionedFromAShard.)
func TestCachedStaleWhileTheShardIsUnreachable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeShard(t)
	f.add("vm-needs-vpc")
	w := followOn(ctx, t, f, &Cached{GVR: v1alpha1.GroupVersionResource})
	names := func(ctx context.Context) ([]string, error) {
		objs, err := w.ListShard(ctx, f.url())
		if err != nil {
			return nil, err
		}
		var out []string
		for _, o := range objs {
			out = append(out, o.Obj.GetName())
		}
		slices.Sort(out)
		return out, nil
	}
	listed := func(want ...string) func() error {
		return func() error {
			got, err := names(ctx)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("listed %v, want %v", got, want)
			}
			return nil
		}
	}
	check.Eventually(ctx, t, 20*time.Second, "the initial list", listed("vm-needs-vpc"))

	f.partition(true)
	// A rule created while the shard cannot be reached: the watch cannot
	// deliver it.
	f.add("db-needs-vpc")
	check.Eventually(ctx, t, 20*time.Second, "the watch to try the shard again, and be refused", func() error {
		if f.refusals() == 0 {
			return fmt.Errorf("no request refused yet")
		}
		return nil
	})
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	got, err := names(short)
	cancelShort()
	if err == nil {
		t.Fatalf("ListShard returned %v while the shard could not be reached, a view that lacks the rule created since", got)
	}
	t.Logf("refused while the shard cannot be reached: %v", err)

	// The shard answers again: the watch resumes where it left off, and
	// the rule created meanwhile takes a moment to arrive. No list made
	// before it has arrived may leave it out.
	f.set(func() { f.backlogDelay = 2 * time.Second })
	f.partition(false)
	check.Eventually(ctx, t, 60*time.Second, "the view of the shard reached again", func() error {
		got, err := names(ctx)
		if err != nil {
			return err
		}
		if !slices.Contains(got, "db-needs-vpc") {
			t.Fatalf("ListShard returned %v once the shard could be reached again: the rule created meanwhile was still on its way", got)
		}
		return nil
	})
}

// followOn follows c on the fake shard, whose cache it builds and starts as
// the APIExport provider would, until ctx ends.
func followOn(ctx context.Context, t *testing.T, f *fakeShard, c *Cached) *Cached {
	t.Helper()
	scheme := runtime.NewScheme()
	check.Must(t, v1alpha1.AddToScheme(scheme))
	check.Must(t, apisv1alpha1.AddToScheme(scheme))
	vw := f.virtualWorkspaces(t)
	shards, err := NewShards(vw, scheme, logr.Discard())
	check.Must(t, err)
	c, err = shards.Follow(c)
	check.Must(t, err)
	cfg := rest.CopyConfig(vw.Home)
	cfg.Host = f.url()
	wc, err := shards.NewEndpointCache(cfg, scheme)
	check.Must(t, err)
	go func() { _ = wc.Start(ctx) }()
	return c
}

// fakeShard serves one shard's virtual workspace of DependencyRules:
// lists, and watches that send every change after the resource version
// they start from and stay open. partition ends every watch and refuses
// every request until it is undone.
type fakeShard struct {
	srv *httptest.Server

	mu      sync.Mutex
	rv      int
	objects map[string]map[string]interface{}
	// events are every change, in order, each with its resource version.
	events  []fakeEvent
	changed chan struct{}
	down    bool
	refused int
	// backlogDelay holds back, at the start of a watch, the changes made
	// before it started.
	backlogDelay time.Duration
}

type fakeEvent struct {
	rv     int
	object map[string]interface{}
}

func newFakeShard(t *testing.T) *fakeShard {
	f := &fakeShard{objects: map[string]map[string]interface{}{}, changed: make(chan struct{})}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeShard) url() string { return f.srv.URL + "/shard" }

func (f *fakeShard) virtualWorkspaces(t *testing.T) *VirtualWorkspaces {
	t.Helper()
	vw, err := NewVirtualWorkspaces(&rest.Config{Host: f.srv.URL + "/home", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "x")
	check.Must(t, err)
	return vw
}

// add creates a rule called name.
func (f *fakeShard) add(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	obj := map[string]interface{}{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "DependencyRule",
		"metadata": map[string]interface{}{"name": name, "resourceVersion": strconv.Itoa(f.rv),
			"annotations": map[string]interface{}{"kcp.io/cluster": "cluster-a"}},
	}
	f.objects[name] = obj
	f.events = append(f.events, fakeEvent{rv: f.rv, object: obj})
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeShard) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// partition cuts the shard off or lets it be reached again. Cut off, it
// ends every watch and refuses every request: a watch as too many
// requests, which the informer retries from where it left off, without
// listing again, so that once the shard answers again what the view
// missed meanwhile comes as watch events.
func (f *fakeShard) partition(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeShard) refusals() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

func (f *fakeShard) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/shard/clusters/*/apis/"+v1alpha1.GroupVersion.String()+"/"+v1alpha1.Resource {
		http.NotFound(w, r)
		return
	}
	watching := r.URL.Query().Get("watch") == "true"
	f.mu.Lock()
	if f.down {
		f.refused++
		f.mu.Unlock()
		if watching {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if !watching {
		items := make([]interface{}, 0, len(f.objects))
		for _, o := range f.objects {
			items = append(items, o)
		}
		rv := f.rv
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]interface{}{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "DependencyRuleList",
			"metadata": map[string]interface{}{"resourceVersion": strconv.Itoa(rv)}, "items": items,
		})
		return
	}
	if r.URL.Query().Get("sendInitialEvents") == "true" {
		// No initial list as watch events: a client lists instead.
		f.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("resourceVersion"))
	backlog := from < f.rv
	delay := f.backlogDelay
	f.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	// A bookmark at once: the informer takes a watch that ends without
	// any event within a second for a failure, and lists again.
	_ = enc.Encode(map[string]interface{}{"type": "BOOKMARK", "object": map[string]interface{}{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "DependencyRule",
		"metadata": map[string]interface{}{"resourceVersion": strconv.Itoa(from)},
	}})
	w.(http.Flusher).Flush()
	if backlog && delay > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(delay):
		}
	}
	for {
		f.mu.Lock()
		down, changed := f.down, f.changed
		var send []fakeEvent
		for _, e := range f.events {
			if e.rv > from {
				send = append(send, e)
			}
		}
		f.mu.Unlock()
		if down {
			return
		}
		for _, e := range send {
			if err := enc.Encode(map[string]interface{}{"type": "ADDED", "object": e.object}); err != nil {
				return
			}
			from = e.rv
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		}
	}
}
