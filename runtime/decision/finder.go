package decision

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

var logicalClusters = schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "logicalclusters"}

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
	raw, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building REST client for the front-proxy: %w", err)
	}
	return &FrontProxyFinder{raw: raw, PageSize: DefaultPageSize, IgnoreDeleting: true}, nil
}

// RESTClient is the finder's client of the front-proxy, for writers that
// share its connection (the Reindexer).
func (f *FrontProxyFinder) RESTClient() rest.Interface { return f.raw }

// FindBlockers implements DependentFinder. It stops reading as soon as it
// has found more than limit blockers; more is then -1 (unknown).
func (f *FrontProxyFinder) FindBlockers(ctx context.Context, cluster, namespace string, target schema.GroupResource, name string, p registry.Protection, limit int) ([]Blocker, int, error) {
	var (
		blockers []Blocker
		more     int
	)
	err := f.inScope(cluster, namespace, p, func(namespace string) (err error) {
		blockers, more, err = f.lookup(ctx, cluster, namespace, target, name, p, limit)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	blockers, more = f.ownBlockers(ctx, cluster, p, blockers, more)
	return blockers, more, nil
}

// ReferencedNames implements DependentFinder with one consistent read of
// every dependent, whatever their index labels say.
func (f *FrontProxyFinder) ReferencedNames(ctx context.Context, cluster, namespace string, p registry.Protection) (map[string]bool, error) {
	names := map[string]bool{}
	err := f.inScope(cluster, namespace, p, func(namespace string) error {
		clear(names)
		_, err := f.list(ctx, cluster, namespace, p, listOptions{}, func(item map[string]interface{}) bool {
			if f.IgnoreDeleting && len(itemDeleting.Values(item)) > 0 {
				return true
			}
			for _, path := range p.Paths {
				for _, v := range path.Values(item) {
					names[v] = true
				}
			}
			return true
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// scopeKey names a dependent resource in one logical cluster.
type scopeKey struct {
	cluster  string
	resource schema.GroupVersionResource
}

// inScope calls read with the namespace to read p's dependents in: the
// deleted object's, or "" (everywhere) when the dependent type is
// cluster-scoped. A type the consumer has not bound has no dependents, and
// read's NotFound then counts as none.
func (f *FrontProxyFinder) inScope(cluster, namespace string, p registry.Protection, read func(namespace string) error) error {
	key := scopeKey{cluster: cluster, resource: p.Dependent}
	if _, clusterScoped := f.scopes.Load(key); clusterScoped {
		namespace = ""
	}
	err := read(namespace)
	if apierrors.IsNotFound(err) && namespace != "" {
		// Not served as a namespaced resource: either the dependent type
		// is cluster-scoped, or the consumer has not bound it at all.
		if err = read(""); err == nil {
			f.scopes.Store(key, true)
		}
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// lookup finds the dependents that reference name. Without a reference
// index for the dependent type it reads every dependent. With one, it reads
// two disjoint sets, both filtered by the API server: the dependents whose
// labels do not carry the current stamp, in full, and the stamped ones
// whose labels say they reference the object.
//
// The two reads must see one state: a dependent relabelled between them
// could be in neither (stamped and referencing at the first read, then
// written again under another replica's newer stamp before the second). So
// when they came back at different revisions, the older one is repeated at
// exactly the newer revision (resourceVersionMatch=Exact, which the API
// server answers from its watch cache while the revision is recent): the
// decision is then one snapshot, as of that revision.
func (f *FrontProxyFinder) lookup(ctx context.Context, cluster, namespace string, target schema.GroupResource, name string, p registry.Protection, limit int) ([]Blocker, int, error) {
	var s registry.Schema
	if f.Schemas != nil {
		s = f.Schemas.IndexSchema(p.Dependent.GroupResource())
	}
	if !s.Indexed() {
		r := f.scan(ctx, cluster, namespace, name, p, limit, listOptions{})
		return r.blockers, r.more, r.err
	}
	var unstamped, referencing scanResult
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		unstamped = f.scan(ctx, cluster, namespace, name, p, limit, listOptions{selector: s.UnstampedSelector(), unindexed: true})
	}()
	refSelector := s.ReferencingSelector(target, name)
	go func() {
		defer wg.Done()
		referencing = f.scan(ctx, cluster, namespace, name, p, limit, listOptions{selector: refSelector})
	}()
	wg.Wait()
	if unstamped.err != nil {
		return nil, 0, unstamped.err
	}
	if referencing.err != nil {
		return nil, 0, referencing.err
	}
	switch {
	case olderRevision(referencing.resourceVersion, unstamped.resourceVersion):
		referencing = f.scan(ctx, cluster, namespace, name, p, limit, listOptions{selector: refSelector, exactly: unstamped.resourceVersion})
	case olderRevision(unstamped.resourceVersion, referencing.resourceVersion):
		unstamped = f.scan(ctx, cluster, namespace, name, p, limit, listOptions{selector: s.UnstampedSelector(), unindexed: true, exactly: referencing.resourceVersion})
	}
	if unstamped.err != nil {
		return nil, 0, unstamped.err
	}
	if referencing.err != nil {
		return nil, 0, referencing.err
	}
	if f.Reindexer != nil && admission.SideEffectsAllowed(ctx) {
		f.Reindexer.Enqueue(cluster, p.Dependent, unstamped.unindexed)
	}
	return mergeBlockers(unstamped, referencing, limit)
}

// olderRevision reports whether resource version a is older than b. kcp's
// resource versions are etcd revisions; anything else counts as older, so
// the caller reads again rather than trust an order it cannot see.
func olderRevision(a, b string) bool {
	if a == b {
		return false
	}
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA != nil || errB != nil || x < y
}

func mergeBlockers(a, b scanResult, limit int) ([]Blocker, int, error) {
	seen := map[Blocker]bool{}
	var out []Blocker
	for _, r := range []scanResult{a, b} {
		for _, x := range r.blockers {
			if !seen[x] {
				seen[x] = true
				out = append(out, x)
			}
		}
	}
	more := a.more + b.more
	if a.more < 0 || b.more < 0 {
		more = -1
	}
	if len(out) > limit {
		out = out[:limit]
		more = -1
	}
	return out, more, nil
}

// Where a listed dependent's identity and deletion state are.
var (
	itemName      = fieldpath.MustParse(".metadata.name")
	itemNamespace = fieldpath.MustParse(".metadata.namespace")
	itemDeleting  = fieldpath.MustParse(".metadata.deletionTimestamp")
	listContinue  = fieldpath.MustParse(".metadata.continue")
	listRevision  = fieldpath.MustParse(".metadata.resourceVersion")
)

// listProjection projects a LIST page onto the continue token and resource
// version, each item's name, namespace and deletion timestamp, and the
// rule's field paths.
func listProjection(p registry.Protection) *fieldpath.Projection {
	paths := []fieldpath.Path{listContinue, listRevision, itemName.InList("items"), itemNamespace.InList("items"), itemDeleting.InList("items")}
	for _, fp := range p.Paths {
		paths = append(paths, fp.InList("items"))
	}
	return fieldpath.NewProjection(paths...)
}

// listOptions narrow one scan.
type listOptions struct {
	// selector is a label selector the API server applies.
	selector string
	// exactly, when set, asks for the state at this revision instead of
	// a consistent read.
	exactly string
	// unindexed counts the items read as dependents without a current
	// index stamp.
	unindexed bool
}

type scanResult struct {
	blockers []Blocker
	more     int
	// resourceVersion is the revision the (first page of the) list was
	// read at.
	resourceVersion string
	// unindexed names the dependents read without a current stamp, for
	// the Reindexer.
	unindexed []index.ObjectKey
	err       error
}

func (f *FrontProxyFinder) scan(ctx context.Context, cluster, namespace, name string, p registry.Protection, limit int, o listOptions) scanResult {
	collect := o.unindexed && f.Reindexer != nil
	var r scanResult
	r.resourceVersion, r.err = f.list(ctx, cluster, namespace, p, o, func(item map[string]interface{}) bool {
		deleting := len(itemDeleting.Values(item)) > 0
		if collect && !deleting {
			r.unindexed = append(r.unindexed, index.ObjectKey{Namespace: first(itemNamespace.Values(item)), Name: first(itemName.Values(item))})
		}
		if f.IgnoreDeleting && deleting {
			return true
		}
		if references(item, p.Paths, name) {
			r.blockers = append(r.blockers, Blocker{Kind: p.DependentKind, Namespace: first(itemNamespace.Values(item)), Name: first(itemName.Values(item))})
			if len(r.blockers) > limit {
				r.blockers, r.more = r.blockers[:limit], -1
				return false
			}
		}
		return true
	})
	return r
}

// list reads the dependents of p in namespace page by page, projected by
// listProjection, and hands each to visit until it returns false. It
// returns the revision the list was read at.
func (f *FrontProxyFinder) list(ctx context.Context, cluster, namespace string, p registry.Protection, o listOptions, visit func(item map[string]interface{}) bool) (string, error) {
	proj := listProjection(p)
	path, err := admission.Path(cluster, p.Dependent, namespace, "")
	if err != nil {
		return "", err
	}
	revision, cont := "", ""
	for {
		req := path.On(f.raw.Get()).SetHeader("Accept", "application/json")
		if f.PageSize > 0 {
			req = req.Param("limit", strconv.FormatInt(f.PageSize, 10))
		}
		if o.selector != "" {
			req = req.Param("labelSelector", o.selector)
		}
		switch {
		case cont != "":
			req = req.Param("continue", cont)
		case o.exactly != "":
			req = req.Param("resourceVersion", o.exactly).Param("resourceVersionMatch", string(metav1.ResourceVersionMatchExact))
		}
		res := req.Do(ctx)
		if err := res.Error(); err != nil {
			// Error, unlike Raw, decodes the server's Status: a denial
			// then names what was refused.
			return revision, err
		}
		body, _ := res.Raw()
		page, err := proj.Decode(body)
		if err != nil {
			return revision, fmt.Errorf("decoding the list of %s: %w", p.Dependent.GroupResource(), err)
		}
		if cont == "" {
			revision = first(listRevision.Values(page))
		}
		items, _ := page["items"].([]interface{})
		objectsExamined.Add(float64(len(items)))
		if o.unindexed {
			unindexedExamined.Add(float64(len(items)))
		}
		for _, it := range items {
			item, _ := it.(map[string]interface{})
			if !visit(item) {
				return revision, nil
			}
		}
		if cont = first(listContinue.Values(page)); cont == "" {
			return revision, nil
		}
	}
}

func first(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[0]
}

func references(obj map[string]interface{}, paths []fieldpath.Path, name string) bool {
	for _, m := range paths {
		if m.Matches(obj, name) {
			return true
		}
	}
	return false
}

// Terminating implements DependentFinder: the logical cluster's own
// LogicalCluster object (always called "cluster") is being deleted, or says
// so in its phase.
func (f *FrontProxyFinder) Terminating(ctx context.Context, cluster string) (bool, error) {
	path, err := admission.Path(cluster, logicalClusters, "", "cluster")
	if err != nil {
		return false, err
	}
	var lc struct {
		Metadata struct {
			DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
		} `json:"metadata"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	}
	if err := f.get(ctx, path, &lc); err != nil {
		return false, fmt.Errorf("reading the LogicalCluster of %s: %w", cluster, err)
	}
	if lc.Metadata.DeletionTimestamp != nil {
		return true, nil
	}
	return lc.Status.Phase == "Terminating" || lc.Status.Phase == "Deleting", nil
}

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
