package webhook

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

var logicalClusters = schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "logicalclusters"}

// DefaultPageSize is how many dependents one LIST page holds. Each page
// is a round trip through the front-proxy, and continuing a list costs the
// server as much as starting one, so pages are large; they still bound the
// memory of one decision.
const DefaultPageSize = 2000

// FrontProxyFinder reads dependents in consumer workspaces through the kcp
// front-proxy, which routes each logical cluster to its shard. It keeps no
// cache of dependents: every decision reads the current state.
type FrontProxyFinder struct {
	base *rest.Config
	http *http.Client
	// PageSize is the LIST page size; pages bound memory per request.
	PageSize int64
	// IgnoreDeleting lets a dependent that is itself being deleted stop
	// blocking, so chains of finalizers cannot deadlock.
	IgnoreDeleting bool

	// scopes remembers which dependent resources turned out cluster-scoped.
	scopes sync.Map
}

// NewFrontProxyFinder returns a finder for base, whose Host is the
// front-proxy without a /clusters suffix.
func NewFrontProxyFinder(base *rest.Config) (*FrontProxyFinder, error) {
	cfg := rest.CopyConfig(base)
	// Admission traffic must not queue behind client-go's default 5 QPS:
	// every DELETE of a protected object waits for these reads. kcp's own
	// priority and fairness still limits the webhook on the server side.
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building HTTP client for the front-proxy: %w", err)
	}
	return &FrontProxyFinder{base: cfg, http: hc, PageSize: DefaultPageSize, IgnoreDeleting: true}, nil
}

func (f *FrontProxyFinder) client(cluster string) (dynamic.Interface, error) {
	cfg := rest.CopyConfig(f.base)
	cfg.Host = strings.TrimSuffix(f.base.Host, "/") + "/clusters/" + cluster
	return dynamic.NewForConfigAndClient(cfg, f.http)
}

// FindBlockers implements DependentFinder. It stops reading as soon as it
// has found more than limit blockers; more is then -1 (unknown).
func (f *FrontProxyFinder) FindBlockers(ctx context.Context, cluster, namespace, name string, p registry.Protection, limit int) ([]Blocker, int, error) {
	c, err := f.client(cluster)
	if err != nil {
		return nil, 0, err
	}
	res := c.Resource(p.Dependent)
	_, clusterScoped := f.scopes.Load(p.Dependent)
	var lister dynamic.ResourceInterface = res
	if namespace != "" && !clusterScoped {
		lister = res.Namespace(namespace)
	}
	blockers, more, err := f.scan(ctx, lister, name, p, limit)
	if apierrors.IsNotFound(err) && namespace != "" && !clusterScoped {
		// Not served as a namespaced resource: either the dependent type
		// is cluster-scoped, or the consumer has not bound it at all.
		blockers, more, err = f.scan(ctx, res, name, p, limit)
		if err == nil {
			f.scopes.Store(p.Dependent, true)
		}
	}
	if apierrors.IsNotFound(err) {
		// The consumer has not bound the dependent's API: no dependents.
		return nil, 0, nil
	}
	return blockers, more, err
}

func (f *FrontProxyFinder) scan(ctx context.Context, lister dynamic.ResourceInterface, name string, p registry.Protection, limit int) ([]Blocker, int, error) {
	var blockers []Blocker
	opts := metav1.ListOptions{Limit: f.PageSize}
	for {
		list, err := lister.List(ctx, opts)
		if err != nil {
			return nil, 0, err
		}
		objectsExamined.Add(float64(len(list.Items)))
		for i := range list.Items {
			item := &list.Items[i]
			if f.IgnoreDeleting && item.GetDeletionTimestamp() != nil {
				continue
			}
			if references(item, p.Paths, name) {
				blockers = append(blockers, Blocker{Kind: p.DependentKind, Namespace: item.GetNamespace(), Name: item.GetName()})
				if len(blockers) > limit {
					return blockers[:limit], -1, nil
				}
			}
		}
		if list.GetContinue() == "" {
			return blockers, 0, nil
		}
		opts.Continue = list.GetContinue()
	}
}

func references(obj *unstructured.Unstructured, paths []fieldpath.Path, name string) bool {
	for _, m := range paths {
		if m.Matches(obj.Object, name) {
			return true
		}
	}
	return false
}

// Terminating implements DependentFinder.
func (f *FrontProxyFinder) Terminating(ctx context.Context, cluster string) (bool, error) {
	c, err := f.client(cluster)
	if err != nil {
		return false, err
	}
	lc, err := c.Resource(logicalClusters).Get(ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	if lc.GetDeletionTimestamp() != nil {
		return true, nil
	}
	phase, _, _ := unstructured.NestedString(lc.Object, "status", "phase")
	return phase == "Terminating" || phase == "Deleting", nil
}
