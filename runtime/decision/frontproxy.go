package decision

// FrontProxyFinder, the webhook's client of the kcp front-proxy, and the GET
// that its reads share. What it reads or writes for one concept is written
// beside that concept.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
)

// DefaultPageSize is how many dependents one LIST page holds; 0 reads them
// all in one response. A decision holds one page's bytes at a time (about
// half a kilobyte a dependent with small specs, more with large ones), and
// pages keep that bounded however many dependents one consumer creates: a
// single response would let one tenant's namespace exhaust the webhook's
// memory for everyone. Every further page costs a round trip and a
// continuation; make bench measures pages of 2 000 about a tenth slower than
// one response among 10 000 dependents, and this size between the two.
const DefaultPageSize = 5000

// FrontProxyFinder reads dependents in consumer workspaces through the kcp
// front-proxy, which routes each logical cluster to its shard. It keeps no
// cache of dependents: every decision reads the current state.
type FrontProxyFinder struct {
	// raw sends every request, each to a admission.Address: the finder
	// decodes only what it reads of an answer (LIST pages only what the
	// rules' field paths reach, fieldpath.Projection), not whole objects.
	raw rest.Interface
	// PageSize is the LIST page size, 0 for one response; pages bound
	// memory per decision at a small cost in time.
	PageSize int64
	// IgnoreDeleting lets a dependent that is itself being deleted stop
	// blocking, so chains of finalizers cannot deadlock.
	IgnoreDeleting bool
	// Schemas, when set, gives the reference index of each dependent type:
	// lookups then read only unindexed and referencing dependents.
	Schemas index.Schemas
	// Reindexer, when set, is given the dependents a lookup had to read in
	// full for want of a current stamp, to be written again and indexed
	// (index.Reindexer).
	Reindexer interface {
		Enqueue(cluster string, resource schema.GroupVersionResource, objs []index.ObjectKey)
	}

	// scopes remembers which dependent resources turned out
	// cluster-scoped, per logical cluster (a scopeKey): a workspace may
	// define a type of the same group and resource as a bound one, with
	// another scope, and what one workspace serves says nothing of
	// another.
	scopes sync.Map
	// bindings remembers which workspaces bind the exports that serve
	// dependent types (bindsDependentExport).
	bindings bindings
}

// NewFrontProxyFinder returns a finder for base, whose Host is the
// front-proxy without a /clusters suffix.
func NewFrontProxyFinder(base *rest.Config) (*FrontProxyFinder, error) {
	cfg := rest.CopyConfig(base)
	// Admission traffic must not queue behind client-go's default 5 QPS:
	// every DELETE of a protected object waits for these reads. kcp's own
	// priority and fairness still limits the webhook on the server side.
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	// Pages of dependents are megabytes of JSON on the cluster's own
	// network between the webhook and the front-proxy: compressing them
	// would spend the shard's CPU on every protected DELETE to save little.
	cfg.DisableCompression = true
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return retryLost{next: rt} })
	raw, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building REST client for the front-proxy: %w", err)
	}
	return &FrontProxyFinder{raw: raw, PageSize: DefaultPageSize, IgnoreDeleting: true}, nil
}

// RESTClient is the finder's client of the front-proxy, for writers that
// share its connection (the Reindexer).
func (f *FrontProxyFinder) RESTClient() rest.Interface { return f.raw }

// get reads the object at path into v. The error of a refused read is the
// server's Status (apierrors tells NotFound from the rest).
func (f *FrontProxyFinder) get(ctx context.Context, path admission.Address, v any) error {
	res := path.On(f.raw.Get()).SetHeader("Accept", "application/json").Do(ctx)
	if err := res.Error(); err != nil {
		return err
	}
	body, _ := res.Raw()
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}
