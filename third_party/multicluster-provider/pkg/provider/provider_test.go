/*
Copyright 2025 The kcp Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package provider

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"sigs.k8s.io/multicluster-runtime/pkg/clusters"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"

	mcpcache "github.com/kcp-dev/multicluster-provider/pkg/cache"
)

type mockAware struct{}

func (m *mockAware) Engage(ctx context.Context, name multicluster.ClusterName, clstr cluster.Cluster) error {
	return nil
}

func testProvider(t *testing.T, extractURLs func(client.Object) ([]string, error)) *Provider {
	t.Helper()
	logger := testr.New(t)

	p := &Provider{
		opts: Options{
			Scheme:                       scheme.Scheme,
			ExtractURLsFromEndpointSlice: extractURLs,
			Log:                          &logger,
		},
		config:           &rest.Config{Host: "https://kcp.example.com"},
		Clusters:         clusters.New[cluster.Cluster](),
		watchedEndpoints: map[string]*watchedEndpoint{},
		aggregateCache:   mcpcache.NewAggregateCache(),
	}

	p.watchEndpointFunc = func(ctx context.Context, cfg *rest.Config, aware multicluster.Aware) (*watchedEndpoint, error) {
		_, cancel := context.WithCancel(ctx)
		return &watchedEndpoint{
			cancel: cancel,
		}, nil
	}

	return p
}

func TestEndpointSliceUpdate(t *testing.T) {
	var vwURLs []string
	extractURLs := func(_ client.Object) ([]string, error) {
		return vwURLs, nil
	}

	p := testProvider(t, extractURLs)
	aware := &mockAware{}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "test"}}

	t.Log("Start with no VWs")
	p.endpointSliceUpdate(t.Context(), aware, obj)
	require.Empty(t, p.watchedEndpoints)

	t.Log("Add two URLs")
	vwURLs = []string{
		"https://kcp.example.com/services/apiexport/default/export-1",
		"https://kcp.example.com/services/apiexport/default/export-2",
	}
	p.endpointSliceUpdate(t.Context(), aware, obj)
	assert.Len(t, p.watchedEndpoints, 2)
	assert.Contains(t, p.watchedEndpoints, vwURLs[0])
	assert.Contains(t, p.watchedEndpoints, vwURLs[1])

	t.Log("Add one more URL")
	vwURLs = []string{
		"https://kcp.example.com/services/apiexport/default/export-1",
		"https://kcp.example.com/services/apiexport/default/export-2",
		"https://kcp.example.com/services/apiexport/default/export-3",
	}
	p.endpointSliceUpdate(t.Context(), aware, obj)
	assert.Len(t, p.watchedEndpoints, 3)
	assert.Contains(t, p.watchedEndpoints, vwURLs[2])

	t.Log("Remove all URLs — endpoints are cancelled and removed")
	vwURLs = []string{}
	p.endpointSliceUpdate(t.Context(), aware, obj)
	assert.Empty(t, p.watchedEndpoints)

	t.Log("Re-add a previously removed URL — should be re-watched")
	vwURLs = []string{
		"https://kcp.example.com/services/apiexport/default/export-1",
	}
	p.endpointSliceUpdate(t.Context(), aware, obj)
	assert.Len(t, p.watchedEndpoints, 1)
	assert.Contains(t, p.watchedEndpoints, vwURLs[0])
}

func TestEndpointSliceUpdate_IdempotentAdd(t *testing.T) {
	callCount := 0
	var vwURLs []string
	extractURLs := func(_ client.Object) ([]string, error) {
		return vwURLs, nil
	}

	p := testProvider(t, extractURLs)
	p.watchEndpointFunc = func(ctx context.Context, cfg *rest.Config, aware multicluster.Aware) (*watchedEndpoint, error) {
		callCount++
		_, cancel := context.WithCancel(ctx)
		return &watchedEndpoint{cancel: cancel}, nil
	}

	aware := &mockAware{}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "test"}}

	vwURLs = []string{"https://kcp.example.com/endpoint-1"}
	p.endpointSliceUpdate(t.Context(), aware, obj)
	assert.Equal(t, 1, callCount)

	// Same URL again — should not call watchEndpointFunc a second time.
	p.endpointSliceUpdate(t.Context(), aware, obj)
	assert.Equal(t, 1, callCount)
}

// notServedYetCache is a WildcardCache whose virtual workspace does not
// serve the watched type for the first failures calls of GetInformer.
type notServedYetCache struct {
	mcpcache.WildcardCache // nil: only the methods below are called.

	failures atomic.Int32
	calls    atomic.Int32
	informer toolscache.SharedIndexInformer
	started  chan struct{}
}

func (c *notServedYetCache) GetInformer(_ context.Context, _ client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	if c.calls.Add(1) <= c.failures.Load() {
		return nil, errors.New("failed to get server groups: the server could not find the requested resource")
	}
	return c.informer, nil
}

func (c *notServedYetCache) Start(ctx context.Context) error {
	close(c.started)
	<-ctx.Done()
	return nil
}

// TestWatchedEndpointRetriesUntilServed: an endpoint whose virtual
// workspace does not serve yet when the endpoint slice names it is watched
// once it does, without another change of the slice.
func TestWatchedEndpointRetriesUntilServed(t *testing.T) {
	logger := testr.New(t)
	c := &notServedYetCache{
		informer: toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &apisv1alpha1.APIBinding{}, 0, toolscache.Indexers{}),
		started:  make(chan struct{}),
	}
	c.failures.Store(1)
	we := &watchedEndpoint{
		opts:          Options{ObjectToWatch: &apisv1alpha1.APIBinding{}},
		wildcardCache: c,
		logger:        &logger,
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		we.run(ctx, &mockAware{})
	}()

	select {
	case <-c.started:
	case <-time.After(10 * time.Second):
		t.Fatalf("the endpoint's cache was not started after %d attempts", c.calls.Load())
	}
	<-done
	assert.Equal(t, int32(2), c.calls.Load(), "one failed attempt and one that succeeded")
}

// TestNewEndpointCache: the wildcard cache of each endpoint is built by
// NewEndpointCache, with the endpoint's URL, and watched by the provider.
func TestNewEndpointCache(t *testing.T) {
	var urls, built []string
	p := testProvider(t, func(client.Object) ([]string, error) { return urls, nil })
	p.opts.Log = ptr.To(logr.Discard())
	p.opts.ObjectToWatch = &apisv1alpha1.APIBinding{}
	started := make(chan struct{})
	p.opts.NewEndpointCache = func(cfg *rest.Config, _ *runtime.Scheme) (mcpcache.WildcardCache, error) {
		built = append(built, cfg.Host)
		return &notServedYetCache{
			informer: toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &apisv1alpha1.APIBinding{}, 0, toolscache.Indexers{}),
			started:  started,
		}, nil
	}
	p.watchEndpointFunc = func(ctx context.Context, cfg *rest.Config, aware multicluster.Aware) (*watchedEndpoint, error) {
		return newWatchedEndpoint(ctx, cfg, aware, &watchedEndpoint{opts: p.opts})
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	urls = []string{"https://kcp.example.com/services/apiexport/root/export"}
	p.endpointSliceUpdate(ctx, &mockAware{}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "test"}})
	assert.Equal(t, urls, built)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the provider did not start the endpoint's cache")
	}
}

// TestNewProviderWithEndpointSliceMapper: with a mapper for the endpoint
// slice, a provider is built without reaching the server.
func TestNewProviderWithEndpointSliceMapper(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(apisv1alpha1.SchemeGroupVersion.WithKind("APIExportEndpointSlice"), meta.RESTScopeRoot)
	s := runtime.NewScheme()
	require.NoError(t, apisv1alpha1.AddToScheme(s))
	_, err := NewProvider(&rest.Config{Host: "https://127.0.0.1:1"}, "export", Options{
		Scheme: s, EndpointSliceObject: &apisv1alpha1.APIExportEndpointSlice{}, EndpointSliceMapper: mapper})
	require.NoError(t, err)
}
