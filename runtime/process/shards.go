package process

import (
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/multicluster-provider/apiexport"
	mcpcache "github.com/kcp-dev/multicluster-provider/pkg/cache"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Shards is the export's virtual workspaces as the kcp APIExport provider
// (github.com/kcp-dev/multicluster-provider) follows them: the provider
// watches the endpoint slice and keeps a wildcard cache per shard, built by
// NewEndpointCache, where every resource given to Follow has an informer
// of its own. A multicluster-runtime manager started with Provider runs it.
//
// Every cache maps the resources below without discovery, so that an
// informer of a resource the export only claims can be created on a shard
// where no workspace accepted the claim yet; it reads as empty there
// (Cached).
type Shards struct {
	VW       *VirtualWorkspaces
	Provider *apiexport.Provider

	scheme *runtime.Scheme
	mapper meta.RESTMapper

	mu       sync.Mutex
	followed []*Cached
}

// NewShards returns the shards of vw's export; log is the provider's.
func NewShards(vw *VirtualWorkspaces, scheme *runtime.Scheme, log logr.Logger) (*Shards, error) {
	s := &Shards{VW: vw, scheme: scheme, mapper: restMapper()}
	p, err := apiexport.New(vw.Home, vw.ExportName, apiexport.Options{Scheme: scheme, Log: &log,
		EndpointSliceMapper: s.mapper, NewEndpointCache: s.NewEndpointCache})
	if err != nil {
		return nil, fmt.Errorf("building the APIExport provider of %q: %w", vw.ExportName, err)
	}
	s.Provider = p
	return s, nil
}

// restMapper maps the resources the runtime reads through the virtual
// workspaces, and the endpoint slice.
func restMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	add := func(gvk schema.GroupVersionKind, gvr schema.GroupVersionResource) {
		m.AddSpecific(gvk, gvr, gvr.GroupVersion().WithResource(gvr.Resource), meta.RESTScopeRoot)
	}
	add(v1alpha1.GroupVersion.WithKind("DependencyRule"), v1alpha1.GroupVersionResource)
	add(apisv1alpha1.SchemeGroupVersion.WithKind("APIBinding"), APIBindingsGVR)
	add(apisv1alpha1.SchemeGroupVersion.WithKind("APIExportEndpointSlice"), endpointSlicesGVR)
	add(admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"), WebhookConfigurationsGVR)
	add(admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"), MutatingWebhookConfigurationsGVR)
	return m
}

// Mapper is the REST mapper of the shards' caches, for clients of the
// virtual workspaces that need no discovery either.
func (s *Shards) Mapper() meta.RESTMapper { return s.mapper }

// Scheme is the scheme of the shards' caches.
func (s *Shards) Scheme() *runtime.Scheme { return s.scheme }

// Follow keeps c.GVR in an informer of every shard's cache, whose events
// reach c's handlers, and returns c. Call it before the provider starts.
func (s *Shards) Follow(c *Cached) (*Cached, error) {
	gvk, err := s.mapper.KindFor(c.GVR)
	if err != nil {
		return nil, fmt.Errorf("following %s: %w", c.GVR.GroupResource(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.shards, c.gvk, c.byURL = s, gvk, map[string]*shardWatch{}
	s.followed = append(s.followed, c)
	return c, nil
}

// NewEndpointCache builds the wildcard cache of the shard cfg points at,
// with an informer of every followed resource (of unstructured objects:
// nothing reads them typed), as the provider asks for
// each shard the endpoint slice names (a shard named again after it was
// dropped gets a new one). The provider starts and stops it.
func (s *Shards) NewEndpointCache(cfg *rest.Config, scheme *runtime.Scheme) (mcpcache.WildcardCache, error) {
	url := cfg.Host
	s.mu.Lock()
	followed := append([]*Cached(nil), s.followed...)
	s.mu.Unlock()
	lives := map[schema.GroupVersionKind]*liveness{}
	for _, c := range followed {
		lives[c.gvk] = newLiveness()
	}
	wc, err := mcpcache.NewWildcardCacheWithOptions(cfg, cache.Options{Scheme: scheme, Mapper: s.mapper}, mcpcache.WildcardCacheOptions{
		WrapListerWatcher: func(lw toolscache.ListerWatcher, obj runtime.Object) toolscache.ListerWatcher {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return lw
			}
			for _, c := range followed {
				if u.GroupVersionKind() == c.gvk {
					return liveListWatch(c.GVR, lw, lives[c.gvk])
				}
			}
			return lw
		},
	})
	if err != nil {
		return nil, fmt.Errorf("building the cache of %s: %w", url, err)
	}
	for _, c := range followed {
		if err := c.attach(url, wc, lives[c.gvk]); err != nil {
			return nil, err
		}
	}
	return wc, nil
}
