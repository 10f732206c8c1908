package decision

// The reads a deletion decision makes of a consumer workspace, through the
// front-proxy: the stored dependents of each protecting type (the
// validator's findBlockers, FrontProxyFinder.FindBlockers), one dependent
// read with a GET (Referencing), and whether the workspace is being deleted
// (Terminating).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// findBlockers looks up the dependents of each protected type concurrently
// and merges what they find in a stable order.
func (v *Validator) findBlockers(ctx context.Context, cluster, namespace string, target schema.GroupResource, name string, protections []registry.Protection, limit int) ([]Blocker, int, error) {
	protections = byDependent(protections)
	type result struct {
		blockers []Blocker
		more     int
		err      error
	}
	results := make([]result, len(protections))
	var wg sync.WaitGroup
	for i, p := range protections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, more, err := v.finder.FindBlockers(ctx, cluster, namespace, target, name, p, limit)
			if err != nil {
				err = fmt.Errorf("listing %s for rule %s: %w", p.Dependent.GroupResource(), p.Rule, err)
			}
			results[i] = result{b, more, err}
		}()
	}
	wg.Wait()
	seen := map[Blocker]bool{}
	var all []Blocker
	more := 0
	var errs []error
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		if r.more < 0 || more < 0 {
			more = -1
		} else {
			more += r.more
		}
		for _, b := range r.blockers {
			if !seen[b] {
				seen[b] = true
				all = append(all, b)
			}
		}
	}
	// Any blocker found is a definite answer even if another lookup failed.
	if len(all) == 0 && len(errs) > 0 {
		return nil, 0, errors.Join(errs...)
	}
	sortBlockers(all)
	if len(all) > limit {
		if more >= 0 {
			more += len(all) - limit
		}
		all = all[:limit]
	}
	return all, more, nil
}

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
			r.blockers = append(r.blockers, Blocker{Dependent: p.Dependent, Kind: p.DependentKind, Namespace: first(itemNamespace.Values(item)), Name: first(itemName.Values(item))})
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

// Referencing implements DependentFinder with a GET of the dependent, which
// the API server answers from storage. A dependent being deleted references
// nothing, so that chains of finalizers cannot deadlock.
func (f *FrontProxyFinder) Referencing(ctx context.Context, cluster string, p registry.Protection, namespace, dependent, name string) (index.Dependent, error) {
	path, err := admission.Path(cluster, p.Dependent, namespace, dependent)
	if err != nil {
		return index.Dependent{}, err
	}
	res := path.On(f.raw.Get()).SetHeader("Accept", "application/json").Do(ctx)
	if err := res.Error(); err != nil {
		if apierrors.IsNotFound(err) {
			return index.Dependent{}, nil
		}
		return index.Dependent{}, err
	}
	body, _ := res.Raw()
	obj := map[string]interface{}{}
	if err := json.Unmarshal(body, &obj); err != nil {
		return index.Dependent{}, fmt.Errorf("decoding %s %s: %w", p.Dependent.GroupResource(), dependent, err)
	}
	d := index.Dependent{Found: true}
	if md, ok := obj["metadata"].(map[string]interface{}); ok {
		labels, _ := md["labels"].(map[string]interface{})
		label, _ := labels[v1alpha1.IntentLabel].(string)
		d.Token = index.TokenOf(label)
	}
	if f.IgnoreDeleting && len(itemDeleting.Values(obj)) > 0 {
		return d, nil
	}
	d.References = references(obj, p.Paths, name)
	return d, nil
}

var logicalClusters = schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "logicalclusters"}

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
