package settle

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// DefaultSettleAfter is how long the stamp of the rules over a type must
// have stood, and been published, before objects are settled under it: as
// long as an intent lives. By then a new rule's reference index has reached
// every shard and every webhook replica knows the rule (a rule is reported
// Ready after --webhook-propagation-delay, 2 s), and every write admitted
// before the stamp was published, by a replica of any version, is stored or
// has failed.
//
// It equals index.DefaultLifetime (a test in package index says so).
const DefaultSettleAfter = 90 * time.Second

// sweepDelay is how long after a create its place is swept: creates that
// come together are settled by one sweep.
const sweepDelay = time.Second

// SettleObjects lists and settles protected objects.
type SettleObjects interface {
	// ListMeta reads the metadata of the objects of gvr in namespace ("":
	// all, or a cluster-scoped type) of cluster, consistently, a page at
	// a time, and hands visit each object, which it must not keep.
	ListMeta(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace string, visit func(*metav1.ObjectMeta)) error
	// Settle labels the object, provided it is still at resourceVersion.
	Settle(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name, resourceVersion, stamp string) error
}

// Stamps gives the stamp of the rules over a resource (registry.Stamp).
type Stamps interface {
	Stamp(target schema.GroupResource) (stamp string, settleable bool)
}

// PendingMarks tell when a write last referenced an object of a type that
// did not exist, in one workspace (PendingReferences).
type PendingMarks interface {
	PendingSince(ctx context.Context, cluster string, gr schema.GroupResource) (time.Time, error)
}

// Intents tell until when the intents on an object stand for writes that
// may still be stored: the zero time when it carries no fresh one.
type Intents interface {
	FreshUntil(annotations map[string]string, now time.Time) time.Time
}

// Prover tells which objects nothing stored references (Validator does,
// with the reads a deletion would make, or one read of every dependent).
type Prover interface {
	// Unreferenced returns those of the objects of gvr called names in
	// namespace of cluster that no stored dependent references.
	Unreferenced(ctx context.Context, cluster, namespace string, gvr schema.GroupVersionResource, names []string) (map[string]bool, error)
}

// provenReferencedFor is how long an object found referenced is not proven
// again. A client retrying the deletion of a referenced object (each
// deletion that reaches the webhook sweeps its place) would otherwise have
// the dependents read again at every retry.
const provenReferencedFor = 10 * time.Second

// place is where protected objects are swept for settling: one type in one
// namespace of one logical cluster, or in all of them (Namespace ""; a
// cluster-scoped type is always swept so).
type place struct {
	Cluster   string
	GVR       schema.GroupVersionResource
	Namespace string
	// Walked: found by a walk (discover.go), not by a request. Such a
	// place is swept only while its workspace still serves the type from
	// the rules' exports, and is not kept among the known places: the
	// next walk finds it again.
	Walked bool
}

// stampSince is a stamp and since when it has been both the registry's and
// the published one.
type stampSince struct {
	stamp string
	since time.Time
}

// Settler labels protected objects that nothing references (package
// settle), so that their deletions skip the webhook. It sweeps the places
// where it saw protected objects created or deleted: an object is settled
// once its rules' stamp has been published and unchanged for After, it
// carries no fresh intent, no write referenced a missing object of its type
// in its workspace within an intent's lifetime, and the reads a deletion
// would make find no dependent; the label is written under the
// resourceVersion the sweep read, so an intent recorded meanwhile wins.
// Nothing here is needed for protection: an object it misses is only
// decided by the webhook.
type Settler struct {
	Stamps    Stamps
	Published interface {
		Accepts(gr schema.GroupResource, stamp string) bool
	}
	Objects SettleObjects
	Prover  Prover
	Pending PendingMarks
	Intents Intents
	// Workspaces and Types, when both are set, find the places of objects
	// that no request this replica admitted has shown it (discover.go).
	Workspaces Workspaces
	Types      Types
	// After is DefaultSettleAfter unless set.
	After time.Duration
	// IntentLifetime is how long an intent counts as fresh.
	IntentLifetime time.Duration
	// Workers sweep places concurrently.
	Workers int
	Log     logr.Logger
	now     func() time.Time

	mu     sync.Mutex
	known  map[schema.GroupResource]map[place]bool
	stable map[schema.GroupResource]stampSince
	// referenced holds, by place and object, until when an object found
	// referenced is not proven again.
	referenced map[place]map[objectName]time.Time
	// queue holds the places requests showed; walked those walks found
	// (queueFor), each with workers of its own, so that a walk over many
	// workspaces never holds up the sweep that a deletion asks for at once.
	queue  workqueue.TypedDelayingInterface[place]
	walked workqueue.TypedDelayingInterface[place]
	// discovering is the types whose places the next walk finds; wake
	// starts it.
	discovering map[schema.GroupResource]schema.GroupVersionResource
	wake        chan struct{}
	// settledUnder is how many objects this replica settled under each
	// stamp.
	settledUnder map[published]int
}

// objectName names an object within a place.
type objectName struct {
	namespace, name string
}

// candidate is what a sweep keeps of an object it may settle: its name and
// the revision the label's patch is conditional on.
type candidate struct {
	objectName
	resourceVersion string
}

func (s *Settler) init() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queue != nil {
		return
	}
	if s.After == 0 {
		s.After = DefaultSettleAfter
	}
	if s.IntentLifetime == 0 {
		s.IntentLifetime = DefaultSettleAfter
	}
	if s.Workers == 0 {
		s.Workers = 2
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.known = map[schema.GroupResource]map[place]bool{}
	s.stable = map[schema.GroupResource]stampSince{}
	s.referenced = map[place]map[objectName]time.Time{}
	s.queue = workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[place]{Name: "settle"})
	s.walked = workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[place]{Name: "settle-walked"})
	s.discovering = map[schema.GroupResource]schema.GroupVersionResource{}
	s.wake = make(chan struct{}, 1)
	s.settledUnder = map[published]int{}
}

// SettledUnder is how many objects of gr this replica has settled under
// stamp since it started.
func (s *Settler) SettledUnder(gr schema.GroupResource, stamp string) int {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settledUnder[published{gr: gr, stamp: stamp}]
}

// queueFor is the queue p waits in.
func (s *Settler) queueFor(p place) workqueue.TypedDelayingInterface[place] {
	if p.Walked {
		return s.walked
	}
	return s.queue
}

// Created implements Candidates: a create's place is swept a second
// later, so that creates that come together share a sweep.
func (s *Settler) Created(cluster string, gvr schema.GroupVersionResource, namespace string) {
	p := s.candidate(cluster, gvr, namespace)
	s.queue.AddAfter(p, sweepDelay)
}

// Deleted implements Candidates: a deletion's place is swept at once, so
// that its neighbours are settled before their own deletions come.
func (s *Settler) Deleted(cluster string, gvr schema.GroupVersionResource, namespace string) {
	p := s.candidate(cluster, gvr, namespace)
	s.queue.Add(p)
}

// candidate remembers the place of a protected object created or deleted.
func (s *Settler) candidate(cluster string, gvr schema.GroupVersionResource, namespace string) place {
	s.init()
	p := place{Cluster: cluster, GVR: gvr, Namespace: namespace}
	s.mu.Lock()
	defer s.mu.Unlock()
	gr := p.GVR.GroupResource()
	if s.known[gr] == nil {
		s.known[gr] = map[place]bool{}
	}
	s.known[gr][p] = true
	return p
}

// Start sweeps until ctx ends.
func (s *Settler) Start(ctx context.Context) error {
	s.init()
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
		s.walked.ShutDown()
	}()
	work := func(q workqueue.TypedDelayingInterface[place]) {
		for {
			p, shutdown := q.Get()
			if shutdown {
				return
			}
			s.sweep(ctx, p)
			q.Done(p)
		}
	}
	for range s.Workers {
		go work(s.queue)
	}
	// Walked places are many and none waits on a client: one worker.
	go work(s.walked)
	if s.Workspaces != nil && s.Types != nil {
		go s.discover(ctx)
	}
	process.Every(ctx, time.Second, s.watchStamps)
	return nil
}

// NeedLeaderElection: every replica settles the objects it heard of.
func (s *Settler) NeedLeaderElection() bool { return false }

// watchStamps notes when the stamp of each protected resource changes, and
// sweeps its places again once the new one has stood for After: those it
// knows at once, and, with discovery, every place that holds objects of the
// resource, found anew.
func (s *Settler) watchStamps() {
	var targets []schema.GroupVersionResource
	if s.Types != nil {
		targets = s.Types.Targets()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	types := map[schema.GroupResource]schema.GroupVersionResource{}
	for _, gvr := range targets {
		types[gvr.GroupResource()] = gvr
	}
	for gr := range s.known {
		if _, ok := types[gr]; !ok {
			types[gr] = schema.GroupVersionResource{}
		}
	}
	for gr, gvr := range types {
		current := s.usable(gr)
		if current == s.stable[gr].stamp {
			continue
		}
		s.stable[gr] = stampSince{stamp: current, since: s.now()}
		if current == "" {
			continue
		}
		s.Log.V(1).Info("rules changed: sweeping again", "resource", gr.String(), "stamp", current, "places", len(s.known[gr]))
		for p := range s.known[gr] {
			s.queue.AddAfter(p, s.After)
		}
		if !gvr.Empty() && s.wake != nil {
			s.discovering[gr] = gvr
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
}

// usable is the stamp objects of gr may be settled under now, "" for none.
func (s *Settler) usable(gr schema.GroupResource) string {
	stamp, ok := s.Stamps.Stamp(gr)
	if !ok || !s.Published.Accepts(gr, stamp) {
		return ""
	}
	return stamp
}

// settlesAtOnce bounds the labels one sweep writes at once.
const settlesAtOnce = 8

// proofsAtOnce bounds the namespaces one sweep proves at once (a place of
// a whole workspace holds many).
const proofsAtOnce = 4

// settle labels o; later hears when to try again.
func (s *Settler) settle(ctx context.Context, p place, o candidate, stamp string, later func(time.Duration), log logr.Logger) bool {
	if s.usable(p.GVR.GroupResource()) != stamp {
		return false
	}
	switch err := s.Objects.Settle(ctx, p.Cluster, p.GVR, o.namespace, o.name, o.resourceVersion, stamp); {
	case err == nil:
		return true
	case apierrors.IsConflict(err):
		later(time.Second)
	case apierrors.IsNotFound(err):
	default:
		log.Info("settling an object failed", "namespace", o.namespace, "name", o.name, "error", err.Error())
		later(s.After)
	}
	return false
}

// forget drops p from the known places: it holds no object any more. A
// create there makes it known again.
func (s *Settler) forget(p place) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.known[p.GVR.GroupResource()], p)
	delete(s.referenced, p)
}

// referencedIn returns the objects of p found referenced at earlier sweeps,
// and until when they are not proven again.
func (s *Settler) referencedIn(p place) map[objectName]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.referenced[p])
}

// sweep settles what it can in p, and comes back when more may be.
func (s *Settler) sweep(ctx context.Context, p place) {
	gr := p.GVR.GroupResource()
	s.mu.Lock()
	st, tracked := s.stable[gr]
	s.mu.Unlock()
	stamp := s.usable(gr)
	if !tracked || stamp == "" || stamp != st.stamp {
		// watchStamps comes back when the stamp is usable and stable.
		return
	}
	now := s.now()
	if wait := st.since.Add(s.After).Sub(now); wait > 0 {
		s.queueFor(p).AddAfter(p, wait)
		return
	}
	log := s.Log.WithValues("cluster", p.Cluster, "resource", gr.String(), "namespace", p.Namespace)
	if p.Walked {
		if serves, err := s.Workspaces.Serves(ctx, p.Cluster, p.GVR); err != nil || !serves {
			// No longer the rules' type there, or it cannot be told:
			// the next walk looks again.
			s.forget(p)
			return
		}
	}
	var (
		mu      sync.Mutex
		again   time.Duration
		settled int
	)
	later := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if again == 0 || d < again {
			again = d
		}
	}
	// The sweep keeps of each object only what settling it needs, not the
	// metadata a page brings (annotations of any size): its memory grows
	// with the candidates' names, not with the objects' size.
	before := s.referencedIn(p)
	// Recomputed at every sweep, so objects that are gone drop out.
	referenced := map[objectName]time.Time{}
	var candidates []candidate
	found := 0
	err := s.Objects.ListMeta(ctx, p.Cluster, p.GVR, p.Namespace, func(o *metav1.ObjectMeta) {
		found++
		if o.Labels[SettledLabel] == stamp || o.DeletionTimestamp != nil {
			return
		}
		if until := s.Intents.FreshUntil(o.Annotations, now); until.After(now) {
			// A write that references the object may still be stored.
			later(until.Sub(now) + time.Second)
			return
		}
		n := objectName{namespace: o.Namespace, name: o.Name}
		if until, ok := before[n]; ok && now.Before(until) {
			referenced[n] = until
			later(until.Sub(now))
			return
		}
		candidates = append(candidates, candidate{objectName: n, resourceVersion: o.ResourceVersion})
	})
	if apierrors.IsNotFound(err) || (err == nil && found == 0) {
		// The namespace or workspace is gone, or empty.
		s.forget(p)
		return
	}
	if err != nil {
		log.Info("listing objects to settle failed", "error", err.Error())
		s.queueFor(p).AddAfter(p, s.After)
		return
	}
	// The objects were read before this: a write that referenced one while
	// it did not exist marked that before it looked for it the last time,
	// so before the object was created, so before the read.
	since, err := s.Pending.PendingSince(ctx, p.Cluster, gr)
	if err != nil {
		log.Info("reading the pending references failed", "error", err.Error())
		s.queueFor(p).AddAfter(p, s.After)
		return
	}
	if until := since.Add(s.IntentLifetime); until.After(s.now()) {
		s.queueFor(p).AddAfter(p, until.Sub(s.now())+time.Second)
		return
	}
	unreferenced := s.prove(ctx, p, candidates, log, later)
	for _, o := range candidates {
		if free, proven := unreferenced[o.objectName]; proven && !free {
			referenced[o.objectName] = now.Add(provenReferencedFor)
		}
	}
	var g errgroup.Group
	g.SetLimit(settlesAtOnce)
	for _, o := range candidates {
		if !unreferenced[o.objectName] {
			continue
		}
		g.Go(func() error {
			if s.settle(ctx, p, o, stamp, later, log) {
				mu.Lock()
				settled++
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	s.mu.Lock()
	s.referenced[p] = referenced
	s.settledUnder[published{gr: gr, stamp: stamp}] += settled
	s.mu.Unlock()
	objectsSettled.Add(float64(settled))
	if settled > 0 {
		log.V(1).Info("objects settled", "count", settled, "stamp", stamp)
	}
	if again > 0 {
		s.queueFor(p).AddAfter(p, again)
	}
}

// prove tells, of the candidates in p, which nothing references (true) and
// which something does (false), proven a namespace at a time (a place of
// every namespace holds several). Where a proof fails it tells nothing, and
// the sweep comes back after After.
func (s *Settler) prove(ctx context.Context, p place, candidates []candidate, log logr.Logger, later func(time.Duration)) map[objectName]bool {
	byNamespace := map[string][]string{}
	for _, o := range candidates {
		byNamespace[o.namespace] = append(byNamespace[o.namespace], o.name)
	}
	var mu sync.Mutex
	out := map[objectName]bool{}
	var g errgroup.Group
	g.SetLimit(proofsAtOnce)
	for namespace, names := range byNamespace {
		g.Go(func() error {
			unreferenced, err := s.Prover.Unreferenced(ctx, p.Cluster, namespace, p.GVR, names)
			if err != nil {
				log.Info("proving objects unreferenced failed", "namespace", namespace, "objects", len(names), "error", err.Error())
				later(s.After)
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			for _, name := range names {
				out[objectName{namespace: namespace, name: name}] = unreferenced[name]
			}
			return nil
		})
	}
	_ = g.Wait()
	return out
}
